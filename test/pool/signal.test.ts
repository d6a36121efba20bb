/**
 * ctx.signal through the real launcher (test/fixtures/pool-signal.ts): a run ended by ctx.stop, by a handler's
 * throw, or by one rank's run signal aborts the signal of every handler still running, on every rank, with the
 * reason `run` settles with there; `run` settles without waiting for them, and what they do afterwards (a put, a
 * returned value) counts nowhere, in this run or the next.
 */
import test from "ava";
import { DEFAULT_CONCURRENCY } from "../../lib/pool/config.ts";
import { fixture, run } from "../helpers/run.ts";
import { sweep } from "../helpers/sweep.ts";

const POOLS = [
  [1, "centralized"],
  [3, "centralized"],
  [3, "centralized,retries=1"],
  [2, "centralized,coordinatorWorks=true"],
  [3, "distributed"],
  [3, "distributed,termination=tree"],
] as const;

const EXPECTED = {
  stop: {
    outcome: { stopped: true, result: 42 },
    stopperOutcome: { stopped: true, result: 42 },
    reason: "StoppedError WP_STOPPED",
    stopperReason: "StoppedError WP_STOPPED",
  },
  fail: {
    outcome: { error: "TaskError" },
    stopperOutcome: { error: "TaskError" },
    reason: "TaskError WP_TASK_FAILED",
    stopperReason: "TaskError WP_TASK_FAILED",
  },
  abort: {
    outcome: { error: "PeerAbortedError" },
    stopperOutcome: { error: "AbortError" },
    reason: "PeerAbortedError WP_ABORTED",
    stopperReason: "AbortError WP_ABORTED",
  },
} as const;

interface Line {
  readonly started: number;
  readonly reasons: string[];
  readonly executed: number;
  readonly latePutThrew: number;
  readonly again: number;
  readonly settledAt: number;
  readonly stopAt: number;
  readonly busyMs: number;
  readonly inFlightMs: number;
}

// The fast suite: each way of ending under a different pool (both modes, retries, a working coordinator); the
// rest in the slow suite (signal.slow.test.ts).
const FAST = new Set(["stop 3 centralized", "fail 3 distributed", "abort 2 centralized,coordinatorWorks=true"]);
const CASES = (["stop", "fail", "abort"] as const).flatMap((how) => POOLS.map(([n, pool]) => [how, n, pool] as const));
for (const [how, n, pool] of sweep(CASES, ([how, n, pool]) => FAST.has(`${how} ${n} ${pool}`))) {
  test(`ctx.signal aborts on ${how} on every rank of ${n} under ${pool}; late puts and values count nowhere`, async (t) => {
    const r = await run(["-n", String(n), "--timeout", "60", "--pool", pool, fixture("pool-signal.ts"), how]);
    t.is(r.code, 0, r.stderr);
    // Up to 16 tasks in flight each listen on the signal: no leak warning for what is no leak.
    t.notRegex(r.stderr, /MaxListenersExceededWarning/);
    const lines = r.stdout
      .split("\n")
      .filter((l) => l.includes("] result "))
      .map((l) => [Number(l.slice(1, l.indexOf("]"))), JSON.parse(l.slice(l.indexOf("result ") + 7))] as const);
    t.is(lines.length, n);
    const want = EXPECTED[how];
    const stopper = n - 1;
    let stopAt = 0;
    let settledAt = 0;
    for (const [rank, v] of lines as (readonly [number, Line])[]) {
      t.like(v, rank === stopper ? want.stopperOutcome : want.outcome, `rank ${rank}`);
      // Every task but the stopper's first waits for its signal: each one that started saw it abort.
      t.true(v.started <= DEFAULT_CONCURRENCY, `rank ${rank} started ${v.started} of 48`);
      t.deepEqual(
        v.reasons,
        new Array(v.started - (rank === stopper ? 1 : 0)).fill(rank === stopper ? want.stopperReason : want.reason),
        `rank ${rank}`,
      );
      if (rank !== stopper) t.is(v.executed, 0, `rank ${rank}: a value returned after the run ended was counted`);
      // Tasks in flight when the run ended count as busy up to the end. (They counted about 1 ms of 18-84; the
      // clocks differ by the moments between the handler's start and the executor's, some ms on a loaded machine,
      // hence half.) Not on the stopper's rank: its first task ends early, and it may then hold none in flight.
      if (rank !== stopper) {
        t.true(
          v.busyMs >= v.inFlightMs / 2,
          `rank ${rank}: busy ${v.busyMs} ms with tasks in flight ${v.inFlightMs} ms`,
        );
      }
      t.is(v.latePutThrew, 0);
      t.is(v.again, 10, `rank ${rank}: the next run's result`);
      if (rank === stopper) stopAt = v.stopAt;
      settledAt = Math.max(settledAt, v.settledAt);
    }
    t.log(`run settled on every rank ${settledAt - stopAt} ms after the ${how}`);
  });
}
