import test, { type ExecutionContext } from "ava";
import { ClosedError, RankFailedError, World } from "workpool";
import { readJobEnv } from "workpool/internal";
import { fixture, linesOf, run } from "../helpers/run.ts";

// A rank whose receive loop fails (a frame that does not decode, a socket error) has a failed world: what
// waits rejects at once with a RankFailedError naming the call and the cause, later calls reject too, and the
// rank cannot end the job as a success. In-process first (a one-rank world, failed by hand or by a corrupt
// message to itself), then real ranks, with a corrupt frame over ZeroMQ.

/** A one-rank world without a launcher, as `connect()` makes it when run alone. */
const solo = () => new World(readJobEnv());

/** A message whose header names a body kind that does not exist (lib/comm/codec.ts). */
function corruptFrame(): Buffer {
  const frame = Buffer.alloc(17 + 3);
  frame.writeUInt32LE(3, 0);
  frame[16] = 9;
  return frame;
}

/** `e` is the failed world's error for `call` (none: the one pools get) with `cause`. */
function isFailure(t: ExecutionContext, e: unknown, call: string | undefined, cause: string): void {
  t.true(e instanceof RankFailedError, String(e));
  const rf = e as RankFailedError;
  t.is(rf.code, "WP_RANK_FAILED");
  t.is(rf.rank, 0);
  t.true(rf.message.startsWith(`${call ? `${call}: ` : ""}rank 0 failed`), rf.message);
  t.true(rf.message.includes(cause), rf.message);
  t.is((rf.cause as Error).message, cause);
}

test("fail(): pending receives reject naming call and cause, later calls reject, listeners hear it once", async (t) => {
  const world = solo();
  await world.send(0, 1, "arrived before");
  const pending = [world.recv({ tag: 2 }), world.recv({ source: 0, tag: 3 })];
  const heard: RankFailedError[] = [];
  world.onFailure((e) => heard.push(e));
  const removed = world.onFailure(() => t.fail("a removed listener was called"));
  removed();
  t.is(world.failure, undefined);

  world.fail(new Error("socket closed under us"));
  world.fail(new Error("a second failure is ignored"));
  for (const p of pending) isFailure(t, await t.throwsAsync(p), "recv", "socket closed under us");
  t.is(heard.length, 1);
  isFailure(t, heard[0], undefined, "socket closed under us"); // a pool's error names no call
  isFailure(t, world.failure, undefined, "socket closed under us");
  let late: RankFailedError | undefined;
  world.onFailure((e) => (late = e));
  t.truthy(late, "a listener added after the failure hears it at once");

  isFailure(t, await t.throwsAsync(world.recv()), "recv", "socket closed under us");
  isFailure(t, await t.throwsAsync(world.send(0, 1, "x")), "send", "socket closed under us");
  isFailure(t, await t.throwsAsync(world.barrier()), "barrier", "socket closed under us");
  isFailure(t, await t.throwsAsync(world.allgather(1)), "allgather", "socket closed under us");
  // What arrived before the failure can still be taken.
  t.deepEqual(world.tryRecv({ tag: 1 }), { source: 0, tag: 1, data: "arrived before" });
  // close() still works, and from then on calls say the world is closed.
  await world.close();
  await t.throwsAsync(world.recv(), { instanceOf: ClosedError });
});

test("a message to this rank that does not decode fails the world instead of throwing where no one catches", async (t) => {
  const world = solo();
  const failed = new Promise<RankFailedError>((resolve) => world.onFailure(resolve));
  const pending = world.recv();
  world.postEncoded(0, corruptFrame());
  const e = await failed;
  t.regex(e.message, /^rank 0 failed, it can no longer receive: corrupt frame from rank 0: unknown body kind 9$/);
  isFailure(t, await t.throwsAsync(pending), "recv", "corrupt frame from rank 0: unknown body kind 9");
});

test("a corrupt frame from another rank fails the receiving rank's world; the rank exits 1 naming the cause", async (t) => {
  const r = await run(["-n", "2", "--timeout", "60", fixture("world-failure.ts")]);
  t.is(r.code, 1, r.stderr);
  const cause = "corrupt frame from rank 0: unknown body kind 9";
  t.is(
    linesOf(r.stderr).at(-1),
    `workpool: rank 1 failed (exit code 1): workpool: rank 1 failed, it can no longer receive: ${cause}`,
  );
  const line = linesOf(r.stdout).find((l) => l.startsWith("[1] failed "));
  t.truthy(line, r.stdout);
  const seen = JSON.parse((line as string).slice("[1] failed ".length)) as Record<string, unknown> & {
    later: Record<string, unknown>;
  };
  const calls: [string, unknown][] = [
    ["recv", seen.recv],
    ["allreduce", seen.allreduce],
    ["send", seen.later.send],
    ["recv", seen.later.recv],
    ["barrier", seen.later.barrier],
  ];
  for (const [call, outcome] of calls) {
    t.deepEqual(outcome, {
      name: "RankFailedError",
      code: "WP_RANK_FAILED",
      rank: 1,
      message: `${call}: rank 1 failed, it can no longer receive: ${cause}`,
      cause,
    });
  }
});

test("a pool run on a rank whose world fails rejects there, instead of hanging", async (t) => {
  const r = await run(["-n", "2", "--timeout", "60", fixture("world-failure.ts"), "pool"]);
  t.is(r.code, 1, r.stderr);
  const line = linesOf(r.stdout).find((l) => l.startsWith("[1] failed "));
  t.truthy(line, r.stdout);
  t.like(JSON.parse((line as string).slice("[1] failed ".length)), {
    run: { name: "RankFailedError", code: "WP_RANK_FAILED", rank: 1 },
  });
});
