/**
 * Async tasks in flight (PoolOptions `concurrency`) through the real launcher (test/fixtures/pool-concurrency.ts):
 * a tree of 433 tasks whose handlers await a timer or a file read before each child they put, so a rank's queue is
 * often empty while a task in flight is about to put more. Under every balancing initiation, both termination
 * detectors and the centralized variants, every task runs exactly once (the result counts one per task on every
 * rank, the ranks' runs add up to it), no rank has more tasks in flight than its limit, and with a limit above 1
 * some rank really had several.
 */
import test from "ava";
import { DEFAULT_CONCURRENCY, INITIATIONS, TERMINATIONS } from "../../lib/pool/config.ts";
import { resolvePoolConfig } from "../../lib/pool/options.ts";
import { fixture, resultLines, run } from "../helpers/run.ts";
import { inFastSuite, sweep } from "../helpers/sweep.ts";

interface Line {
  readonly result: number;
  readonly ran: number;
  readonly executed: number;
  readonly maxInFlight: number;
  readonly size: number;
  readonly concurrency: number;
}

const CASES: [n: number, pool: string, what: "timer" | "long-timer" | "fs", width: string][] = [
  [1, "centralized", "timer", "default"],
  [1, "centralized", "fs", "default"],
  [1, "centralized", "timer", "1"],
  [3, "centralized", "timer", "default"],
  [3, "centralized", "fs", "4"],
  [3, "centralized", "timer", "1"],
  [3, "centralized,keep=0", "timer", "default"],
  // Long tasks that wait: dealt one at a time, a worker kept 1 of its 16 in flight (coordinator.ts `deficit`).
  [3, "centralized,keep=0", "long-timer", "default"],
  [2, "centralized,coordinatorWorks=true", "fs", "default"],
  [3, "centralized,retries=1", "timer", "default"],
  ...INITIATIONS.map((i): [number, string, "timer", string] => [3, `distributed,initiation=${i}`, "timer", "default"]),
  ...TERMINATIONS.map((d): [number, string, "fs", string] => [3, `distributed,termination=${d}`, "fs", "default"]),
  [3, "distributed,termination=tree", "timer", "1"],
];

// The fast suite: one case of each mode and kind of wait, keep=0, a limit of 4, and a detector of each kind; the
// rest in the slow suite (concurrency.slow.test.ts).
const FAST = new Set([
  "1 centralized timer default",
  "3 centralized fs 4",
  "3 centralized,keep=0 timer default",
  "3 centralized,keep=0 long-timer default",
]);
const fast = ([n, pool, what, width]: (typeof CASES)[number]) =>
  FAST.has(`${n} ${pool} ${what} ${width}`) ||
  pool === "distributed,initiation=receiver" ||
  (pool === "distributed,termination=tree" && what === "fs");

for (const [n, pool, what, width] of sweep(CASES, fast)) {
  test(`async tasks in flight (${what}, concurrency ${width}) run exactly once on ${n} rank${n > 1 ? "s" : ""} under ${pool}`, async (t) => {
    const r = await run([
      "-n",
      String(n),
      "--timeout",
      "90",
      "--pool",
      pool,
      fixture("pool-concurrency.ts"),
      what,
      width,
    ]);
    t.is(r.code, 0, r.stderr);
    const lines = resultLines<Line>(r.stdout);
    t.is(lines.length, n);
    const size = lines[0]?.size as number;
    const limit = pool.includes("retries") ? 1 : width === "default" ? DEFAULT_CONCURRENCY : Number(width);
    let ran = 0;
    let most = 0;
    for (const v of lines) {
      t.is(v.result, size, JSON.stringify(v));
      t.is(v.executed, v.ran);
      t.is(v.concurrency, limit);
      t.true(v.maxInFlight <= limit, JSON.stringify(v));
      ran += v.ran;
      most = Math.max(most, v.maxInFlight);
    }
    t.is(ran, size);
    if (limit > 1) t.true(most > 1, `at most ${most} in flight on any rank`);
    else t.is(most, 1);
  });
}

if (inFastSuite())
  test("with tasks in flight, queued tasks still start in priority order", async (t) => {
    const r = await run(["-n", "1", "--timeout", "60", fixture("pool-concurrency.ts"), "priority", "4"]);
    t.is(r.code, 0, r.stderr);
    const line = r.stdout.split("\n").find((l) => l.includes("result ")) as string;
    const { started } = JSON.parse(line.slice(line.indexOf("result ") + 7)) as { started: number[] };
    t.deepEqual(
      started,
      Array.from({ length: 40 }, (_, i) => 39 - i),
    );
  });

if (inFastSuite())
  test("`concurrency` is a positive integer, and 1 with `retries`: checked up front, naming the option", (t) => {
    t.is(resolvePoolConfig({}, undefined, 2).concurrency, DEFAULT_CONCURRENCY);
    t.is(resolvePoolConfig({ concurrency: 3 }, "distributed", 2).concurrency, 3);
    t.is(resolvePoolConfig(undefined, "distributed,concurrency=5", 2).concurrency, 5);
    t.is(resolvePoolConfig(undefined, "centralized,retries=1", 2).concurrency, 1);
    t.throws(() => resolvePoolConfig({ concurrency: 0 }, undefined, 2), {
      message: "pool option `concurrency` must be a positive integer; got 0",
    });
    t.throws(() => resolvePoolConfig({ concurrency: 2.5 }, undefined, 2), { message: /`concurrency`.*got 2.5/ });
    t.throws(() => resolvePoolConfig({ concurrency: 4 }, "centralized,retries=1", 2), {
      message: /`concurrency` must be 1 with `retries`.*got 4/,
    });
  });
