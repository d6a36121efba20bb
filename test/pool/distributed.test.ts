import test from "ava";
import { DISTRIBUTED_COMBINATIONS, TERMINATIONS } from "../../lib/internal.ts";
import { fixture, run } from "../helpers/run.ts";

const SCENARIOS = fixture("pool-distributed.ts");
/** The sizes of the combination sweep: WORKPOOL_TEST_SWEEP_RANKS (a list) or 2. */
const RANKS = (process.env.WORKPOOL_TEST_SWEEP_RANKS ?? "2").split(",").map(Number);
const TREE = fixture("pool-tree.ts");

/** Runs a scenario on `n` ranks; returns the launcher's result and every `result` JSON line of rank 0. */
async function scenario(n: number, args: string[], pool?: string) {
  const flags = ["-n", String(n), "--timeout", "90", ...(pool ? ["--pool", pool] : [])];
  const r = await run([...flags, SCENARIOS, ...args]);
  const results = r.stdout
    .split("\n")
    .filter((l) => l.startsWith("[0] result ") || l.startsWith("result "))
    .map((l) => JSON.parse(l.slice(l.indexOf("result ") + "result ".length)));
  return { ...r, results };
}

const WORKLOADS = ["one", "spread", "pinned", "empty", "moves", "mixed", "relay", "pingpong", "pingpong"];
/** Tasks each workload runs (see test/fixtures/pool-distributed.ts). */
const EXPECTED: Record<string, (limit: number) => number> = {
  empty: () => 0,
  moves: (limit) => Math.min(limit, 200),
  relay: (limit) => Math.min(limit, 600),
  pingpong: () => 17,
};

// Each launch runs every balancing combination (initiation, and partner where it takes one) of one detector,
// each on these workloads: a tree of known size rooted on rank 0, one spread over all ranks, one with pinned
// tasks, an empty pool, flat work on rank 0 that can only finish if balancing moves some of it, a tree mixing
// pinned tasks with async handlers, pinned work flowing forward round the ring, and (twice) a ping-pong chain
// built to provoke the interleaving a token ring's colouring rule exists for: a rank reactivated behind the
// token. Chaos delays reorder every pool message. A detector that declares termination early shows up as lost
// tasks, as a rank whose last task ended after the latest one the detector collected (`late`), or as the
// engine's "declared terminated while rank r was still active" error (a non-zero exit).
// On 4 and 16 ranks too in the slow suite (distributed-sweep.slow.test.ts).
for (const n of RANKS) {
  for (const termination of TERMINATIONS) {
    const combinations = DISTRIBUTED_COMBINATIONS.filter((c) => c.termination === termination).length;
    test(`${termination}: all ${combinations} balancing combinations on ${n} ranks run every task exactly once`, async (t) => {
      const limit = 2000;
      const r = await scenario(n, ["combos", termination, "2", String(limit), WORKLOADS.join(","), "5"]);
      t.is(r.code, 0, r.stderr);
      t.is(r.results.length, combinations * WORKLOADS.length, r.stdout);
      for (const res of r.results) {
        const label = `${res.initiation}/${res.partner}/${res.termination}/${res.workload}`;
        t.is(res.termination, termination);
        const expected = (EXPECTED[res.workload] ?? (() => limit))(limit);
        t.like(
          res,
          { expected, executed: expected, twice: -1, outOfRange: 0, misplaced: 0, late: [], detected: 1 },
          label,
        );
        if (expected > 0) t.is(res.missing, -1, label);
        if (res.workload === "moves") t.true(res.busyRanks >= 2, `${label}: no task left rank 0`);
        t.is(res.pinnedSent, res.pinnedReceived, label);
        t.is(res.moved, res.movedOut, `${label}: tasks moved out and in differ`);
        t.true(res.latencyMs >= 0, label);
      }
    });
  }
}

test("receiver: a rank holding a few tasks a rank offers them to the next ranks before its first task", async (t) => {
  const n = 3;
  const r = await scenario(n, ["opening"]);
  t.is(r.code, 0, r.stderr);
  const [onRoot, everyRank] = r.results[0] as Record<string, unknown>[];
  // Run 1: rank 0 alone held 2 x 3 tasks: one OPEN to each other rank. (Whether one answers HAVE depends on
  // timing: a rank whose request to rank 0 was answered first has work by then; the simulation counts them.)
  const sentReceived = (runResult: Record<string, unknown> | undefined) =>
    (runResult?.counters as number[][]).map(([sent, received]) => [sent, received]);
  t.is(onRoot?.result, 2 * n);
  t.deepEqual(sentReceived(onRoot), [
    [n - 1, 0],
    [0, 1],
    [0, 1],
  ]);
  // Run 2: every rank held 2, one beyond its first: one OPEN to the next rank, so one received. (Whether it is
  // answered HAVE depends on whether that rank has run its own two yet; the simulation counts them.)
  t.is(everyRank?.result, 2 * n);
  t.deepEqual(
    sentReceived(everyRank),
    Array.from({ length: n }, () => [1, 1]),
  );
});

test("one rank: a distributed pool runs locally", async (t) => {
  const r = await scenario(1, ["combos", "all", "0", "500", "one,spread,pinned,empty"]);
  t.is(r.code, 0, r.stderr);
  t.is(r.results.length, DISTRIBUTED_COMBINATIONS.length * 4);
  for (const res of r.results) t.like(res, { executed: res.expected, twice: -1, misplaced: 0 });
});

test("--pool SPEC selects the distributed engine and its strategies", async (t) => {
  const r = await run([
    "-n",
    "4",
    "--timeout",
    "60",
    "--pool",
    "distributed,initiation=sender,partner=ring,termination=tree",
    TREE,
    "6",
    "4",
  ]);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /"total":5461,"expected":5461,"puts":5461/);
});

for (const [initiation, termination] of [
  ["receiver", "token-ring"],
  ["sender", "tree"],
]) {
  test(`a handler error rejects run on every rank with a TaskError (${initiation}, ${termination})`, async (t) => {
    // No chaos: it delays every message by a timer, and the failing rank exits before its FAIL would leave.
    const args = ["-n", "3", "--timeout", "60", SCENARIOS, "failing", initiation as string, termination as string];
    const r = await run(args);
    t.not(r.code, 0);
    const caught = r.stdout.split("\n").filter((l) => l.includes("caught TaskError"));
    t.is(caught.length, 3, r.stdout);
    for (const line of caught) t.regex(line, /code=WP_TASK_FAILED rank=\d task=42 cause=.*task 42 is bad/);
  });
}

for (const termination of TERMINATIONS) {
  test(`two phases and a second pool in one job (${termination})`, async (t) => {
    const r = await scenario(3, ["phases", termination, "2"]);
    t.is(r.code, 0, r.stderr);
    t.deepEqual(r.results, [{ first: 60, second: 30, third: 1 }]);
  });
}

test("priorities order pinned and movable tasks together on a rank", async (t) => {
  const r = await scenario(2, ["priorities"]);
  t.is(r.code, 0, r.stderr);
  t.deepEqual(r.results, [{ count: 200, sorted: true, onRoot: 200 }]);
});
