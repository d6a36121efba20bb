import test from "ava";
import { pack, unpack } from "workpool/internal";
import { AbortError, PeerAbortedError, RankFailedError, TaskError } from "workpool";
import { type FailBody, failFromMessage, failureBody, sendFail } from "../../lib/pool/failure.ts";
import { Executor } from "../../lib/pool/executor.ts";
import { Results } from "../../lib/pool/results.ts";
import type { PoolRuntime } from "../../lib/pool/runtime.ts";
import { emptyStats, type TaskContext } from "../../lib/pool/types.ts";
import { fixture, run } from "../helpers/run.ts";

// What a failed run rejects with, on the rank it failed on and on the others: the FAIL message carries the
// kind of failure, so a peer's abort reads as an abort, a task's throw as a TaskError, anything else as a
// RankFailedError (lib/errors.ts). First the message in-process, then real ranks through the launcher.

/** The body as the other rank gets it: through msgpack, as on the wire. */
const wire = (f: FailBody) => unpack(pack(f)) as FailBody;

test("a task's throw travels as a TaskError with rank, task and the cause's name and message", (t) => {
  const cause = new RangeError("task 42 is bad");
  const e = failFromMessage(wire(failureBody(3, new TaskError(1, { id: 42 }, "task failed on rank 1", { cause }))));
  t.true(e instanceof TaskError);
  t.false(e instanceof AbortError);
  const te = e as TaskError;
  t.is(te.code, "WP_TASK_FAILED");
  t.is(te.rank, 1, "the rank the task ran on, not the sender");
  t.deepEqual(te.task, { id: 42 });
  t.is(te.message, "task failed on rank 1");
  t.is((te.cause as Error).name, "RangeError");
  t.is((te.cause as Error).message, "task 42 is bad");
  t.is((te.cause as Error).stack, cause.stack, "the stack of the handler that threw, not of the rebuilding");
});

// A stack trace names the app's handler as the app wrote it: called as a method of the executor it read
// `solveBoard [as handler]` (and an anonymous one `pool.run.reduce [as handler]`), and its `this` was the executor.
test("the handler runs as a plain function: its stack frame is its own name, its this undefined", (t) => {
  const ctx = { rank: 0, signal: new AbortController().signal } as TaskContext<number>;
  let self: unknown = "not called";
  function solveBoard(this: unknown, n: number): number {
    self = this;
    if (n > 1) throw new RangeError(`bad board ${n}`);
    return n;
  }
  const exec = new Executor<number>(solveBoard, ctx, emptyStats(0, "distributed"), Results.of(undefined));
  exec.resume();
  exec.execute(1);
  t.is(self, undefined);
  const e = t.throws(() => exec.execute(2), { instanceOf: TaskError }) as TaskError;
  const top = ((e.cause as Error).stack ?? "").split("\n")[1] ?? "";
  t.regex(top, /^\s+at solveBoard \(/, top);
  t.notRegex(top, /\[as /, top);
});

test("an abort travels as a PeerAbortedError naming the aborting rank and its signal's reason", (t) => {
  const reason = new Error("enough");
  const e = failFromMessage(wire(failureBody(2, new AbortError("run aborted on rank 2", { cause: reason }))));
  t.true(e instanceof PeerAbortedError);
  t.true(e instanceof AbortError, "every abort is an AbortError");
  t.false(e instanceof TaskError);
  const pe = e as PeerAbortedError;
  t.is(pe.name, "PeerAbortedError");
  t.is(pe.code, "WP_ABORTED");
  t.is(pe.rank, 2);
  t.is(pe.message, "run aborted on rank 2");
  t.is((pe.cause as Error).message, "enough");
});

test("any other failure travels as a RankFailedError naming the rank", (t) => {
  const own = failFromMessage(wire(failureBody(4, new TypeError("internal: bad state"))));
  t.true(own instanceof RankFailedError);
  t.false(own instanceof TaskError);
  t.is((own as RankFailedError).rank, 4);
  t.is(own.code, "WP_RANK_FAILED");
  t.is((own.cause as Error).name, "TypeError");
  t.is((own.cause as Error).message, "internal: bad state");
  // A RankFailedError keeps the rank it names (a coordinator relaying a worker's failure, say).
  const relayed = failFromMessage(wire(failureBody(0, new RankFailedError(5, "rank 5 failed"))));
  t.true(relayed instanceof RankFailedError);
  t.is((relayed as RankFailedError).rank, 5);
});

test("sendFail leaves out a task that cannot be encoded, and keeps the kind", (t) => {
  const sent: Record<string, unknown>[] = [];
  const rt = {
    send(_dest: number, _tag: number, body: Record<string, unknown>) {
      pack(body); // throws for what cannot go on the wire, as the real send does
      sent.push(body);
    },
  } as unknown as PoolRuntime;
  const error = new TaskError(1, { f: Symbol("not encodable") }, "task failed on rank 1");
  sendFail(rt, [0, 2], 4, failureBody(1, error));
  t.is(sent.length, 2);
  for (const body of sent) {
    const e = failFromMessage(wire(body as unknown as FailBody));
    t.true(e instanceof TaskError);
    t.is((e as TaskError).rank, 1);
    t.is((e as TaskError).task, undefined);
  }
});

const POOL_FAILURES = fixture("pool-failures.ts");

interface Outcome {
  name: string;
  code: string;
  message: string;
  rank: number;
  task: unknown;
  cause?: { name: string; message: string };
  isAbortError: boolean;
  isPeerAbortedError: boolean;
  isTaskError: boolean;
  isRankFailedError: boolean;
}

async function outcomes(n: number, pool: string, args: string[]): Promise<Outcome[]> {
  const r = await run(["-n", String(n), "--timeout", "90", "--pool", pool, POOL_FAILURES, ...args]);
  if (r.code !== 0) throw new Error(`job failed (${r.code}):\n${r.stderr}`);
  const line = r.stdout.split("\n").find((l) => l.startsWith("[0] result "));
  if (!line) throw new Error(`no result line:\n${r.stdout}`);
  return JSON.parse(line.slice("[0] result ".length)) as Outcome[];
}

for (const [pool, who] of [
  ["centralized", 1],
  ["centralized,coordinatorWorks=true", 0],
  ["distributed", 2],
] as const) {
  test(`${pool}: rank ${who}'s abort is an AbortError there and a PeerAbortedError naming it elsewhere`, async (t) => {
    const all = await outcomes(3, pool, ["abort", String(who)]);
    t.is(all.length, 3);
    for (const [rank, o] of all.entries()) {
      t.is(o.code, "WP_ABORTED", `rank ${rank}: ${JSON.stringify(o)}`);
      t.true(o.isAbortError);
      t.false(o.isTaskError);
      t.is(o.message, `run aborted on rank ${who}`);
      t.is(o.cause?.message, "enough");
      if (rank === who) {
        t.is(o.name, "AbortError");
        t.false(o.isPeerAbortedError);
      } else {
        t.is(o.name, "PeerAbortedError");
        t.true(o.isPeerAbortedError);
        t.is(o.rank, who);
      }
    }
  });
}

for (const pool of ["centralized", "distributed"]) {
  test(`${pool}: a task's throw is a TaskError on every rank, naming the rank it ran on`, async (t) => {
    const all = await outcomes(3, pool, ["throw"]);
    t.is(all.length, 3);
    const ranAt = all[0]?.rank as number;
    t.true(ranAt >= 0 && ranAt < 3, `rank ${ranAt}`);
    for (const o of all) {
      t.like(o, {
        name: "TaskError",
        code: "WP_TASK_FAILED",
        rank: ranAt,
        task: 42,
        cause: { name: "RangeError", message: "task 42 is bad" },
        isTaskError: true,
        isAbortError: false,
        isRankFailedError: false,
      });
    }
  });
}

for (const pool of ["centralized", "distributed"]) {
  test(`${pool}: a task that cannot be sent fails the run on every rank: EncodeError where, RankFailedError elsewhere`, async (t) => {
    const all = await outcomes(3, pool, ["unsendable"]);
    t.is(all.length, 3);
    const at = all.findIndex((o) => o.name === "EncodeError");
    t.true(at >= 0, JSON.stringify(all));
    // Named by the app's own path inside the task, not the message envelope's (data.t[0].f).
    t.regex(all[at]?.message ?? "", /^pool: task\.f is a function, which cannot be sent$/);
    for (const [rank, o] of all.entries()) {
      if (rank === at) continue;
      t.like(o, { name: "RankFailedError", rank: at, isTaskError: false }, `rank ${rank}`);
    }
  });
}
