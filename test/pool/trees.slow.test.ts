/**
 * Task trees through the real launcher (test/fixtures/pool-trees.ts): the order a rank runs its own tasks in
 * (depth-first under lifo, breadth-first under fifo) and the queue it needs for a deep tree; centralized
 * workers keeping their puts, with and without chaos, running every task exactly once; and the values
 * handlers return, reduced into `run`'s result, the same on every rank, under every kind of pool.
 */
import test from "ava";
import { fixture, run } from "../helpers/run.ts";
import {
  DEEP_BRANCHING,
  DEEP_DEPTH,
  DEEP_ROOT,
  DEEP_SIZE,
  deepChildren,
  IRREGULAR_ROOT,
  irregularChildren,
  walk,
} from "../fixtures/tree-shapes.ts";

const TREES = fixture("pool-trees.ts");

/** Runs a scenario on `n` ranks; returns the launcher's result and every `result` JSON line of rank 0. */
async function scenario(n: number, args: string[], pool?: string) {
  const flags = ["-n", String(n), "--timeout", "90", ...(pool ? ["--pool", pool] : [])];
  const r = await run([...flags, TREES, ...args]);
  const results = r.stdout
    .split("\n")
    .filter((l) => l.startsWith("[0] result "))
    .map((l) => JSON.parse(l.slice("[0] result ".length)));
  return { ...r, results };
}

// --- order and queue length ---------------------------------------------------------------------------------

const IRREGULAR = {
  lifo: walk(IRREGULAR_ROOT, irregularChildren, "lifo").order.map((n) => n.id),
  fifo: walk(IRREGULAR_ROOT, irregularChildren, "fifo").order.map((n) => n.id),
};
const DEEP_PEAK = {
  lifo: walk(DEEP_ROOT, deepChildren, "lifo").peak,
  fifo: walk(DEEP_ROOT, deepChildren, "fifo").peak,
};
/** What a depth-first walk may hold at most: every level's unvisited siblings, plus a little. */
const DEPTH_FIRST_BOUND = DEEP_DEPTH * DEEP_BRANCHING + 4;

test("the trees are what the order tests need: irregular, and a deep one that fifo holds wide", (t) => {
  t.true(IRREGULAR.lifo.length > 300, `irregular tree of ${IRREGULAR.lifo.length} nodes`);
  t.notDeepEqual(IRREGULAR.lifo, IRREGULAR.fifo);
  t.deepEqual(
    [...IRREGULAR.lifo].sort((a, b) => a - b),
    [...IRREGULAR.fifo].sort((a, b) => a - b),
  );
  t.true(DEEP_PEAK.lifo > DEEP_DEPTH / 2 && DEEP_PEAK.lifo <= DEPTH_FIRST_BOUND, `lifo peak ${DEEP_PEAK.lifo}`);
  t.true(DEEP_PEAK.fifo > 2 * DEPTH_FIRST_BOUND, `fifo peak ${DEEP_PEAK.fifo}`);
});

// On one rank every task runs where it was put. With -n 2 and a centralized pool, the roots are put on the
// only worker, which keeps what its handlers put (default keep) and is never asked to release (no other
// worker waits): the same walk. With keep=0 every task goes through the coordinator's queue, dealt oldest
// first to that one worker, which runs them in the order dealt: breadth-first, whatever the order option.
for (const [n, pool, order, deep] of [
  [1, undefined, "lifo", true],
  [1, "centralized,order=fifo", "fifo", true],
  [1, "distributed", "lifo", true],
  [1, "distributed,order=fifo", "fifo", true],
  [2, "centralized", "lifo", true],
  [2, "centralized,order=fifo", "fifo", true],
  [2, "centralized,keep=0", "fifo", false],
] as const) {
  const walkName = order === "lifo" ? "depth-first (newest child first)" : "breadth-first";
  test(`-n ${n}${pool ? ` --pool ${pool}` : ""}: tasks run ${walkName}, as a plain loop runs them${deep ? "; the queue stays as a plain loop's" : ""}`, async (t) => {
    const r = await scenario(n, ["walk", ...(deep ? [] : ["order-only"])], pool);
    t.is(r.code, 0, r.stderr);
    const [res] = r.results;
    t.is(r.results.length, 1, r.stdout);
    t.is(res.config.order, pool?.includes("order=fifo") ? "fifo" : "lifo");
    const worker = n - 1;
    t.deepEqual(res.ran[worker], IRREGULAR[order], `run order on rank ${worker}`);
    if (n > 1) t.deepEqual(res.ran[0], [], "the coordinator runs no task");
    if (!deep) return;
    t.is(res.executed[worker], DEEP_SIZE);
    const peak = res.peak[worker] as number;
    t.is(peak, DEEP_PEAK[order], `most tasks waiting: ${peak}`);
    if (order === "lifo") t.true(peak <= DEPTH_FIRST_BOUND, `lifo peak ${peak} > depth x branching`);
    else t.true(peak > 2 * DEPTH_FIRST_BOUND, `fifo peak ${peak} not far above depth x branching`);
  });
}

// --- centralized workers keeping their puts -----------------------------------------------------------------

// Each launch runs five centralized configurations (default keep, keep=0, keep=4, coordinatorWorks with the
// default keep and with keep=4), each without and with chaos (every pool message delayed by 0-2 ms, so they
// overtake each other), on a tree of 3000 tasks rooted on rank 0. With two workers or more, the root's rank
// waits in its second task until another rank has run one: the run ends only if work leaves that rank.
const LIMIT = 3000;
for (const n of [2, 3, 5]) {
  test(`keep: every task runs exactly once and the result counts them on every rank, ${n} ranks, with and without chaos`, async (t) => {
    const r = await scenario(n, ["keep", String(LIMIT)]);
    t.is(r.code, 0, r.stderr);
    t.is(r.results.length, 10, r.stdout);
    for (const res of r.results) {
      const label = `${res.name}, chaos ${res.chaos}`;
      t.like(res, { limit: LIMIT, executed: LIMIT, twice: -1, missing: -1 }, label);
      t.deepEqual(res.results, Array(n).fill(LIMIT), `${label}: result per rank`);
      const workers = res.name.startsWith("coordinatorWorks") ? n : n - 1;
      t.is(res.hold, workers >= 2, label);
      if (res.hold) {
        t.true(res.busyRanks >= 2, `${label}: tasks ran on ${res.busyRanks} rank(s)`);
        // With the default keep, all of the tree stays where the root ran unless that rank releases some.
        if (!res.name.includes("keep=")) t.true(res.releases >= 1, `${label}: no release`);
      }
    }
    if (n === 2) {
      // One worker, fed by a coordinator that does not work: it keeps every put (one grant, the root), sends
      // every put to the coordinator with keep=0 (every task granted), and the surplus over 4 with keep=4.
      const granted = (name: string, chaos: number) =>
        r.results.find((x) => x.name === name && x.chaos === chaos)?.granted as number;
      for (const chaos of [0, 2]) {
        t.is(granted("default", chaos), 1, `default keep, chaos ${chaos}`);
        t.is(granted("keep=0", chaos), LIMIT, `keep=0, chaos ${chaos}`);
        t.true(granted("keep=4", chaos) > 1, `keep=4, chaos ${chaos}: ${granted("keep=4", chaos)} granted`);
      }
    }
  });
}

// --- results ------------------------------------------------------------------------------------------------

const L = 1200;
const sumTo = (k: number) => (k * (k - 1)) / 2;
let mod7 = 0;
for (let id = 0; id < L; id++) mod7 += id % 7;

/** What each case of the fixture's CASES reduces to (fixture: pool-trees.ts), and how many tasks it runs. */
const EXPECTED: Record<string, { result: unknown; executed: number }> = {
  count: { result: L, executed: L },
  "count-again": { result: 400, executed: 400 },
  "sum-ids": { result: sumTo(L), executed: L },
  max: { result: L - 1, executed: L },
  min: { result: 5000 - (L - 1), executed: L },
  fields: { result: { a: Math.floor(L / 2), b: L }, executed: L },
  array: { result: [L, mod7, -sumTo(L)], executed: L },
  typed: { result: { Float64Array: [L, sumTo(L)] }, executed: L },
  bigint: { result: `${BigInt(sumTo(L)) * 1_000_000_000_000n}n`, executed: L },
  some: { result: Math.ceil(L / 3), executed: L },
  none: { result: "<undefined>", executed: L },
  async: { result: 2 * L, executed: L },
  empty: { result: "<undefined>", executed: 0 },
  "after-empty": { result: 300, executed: 300 },
};
const CONFIGS = ["centralized", "coordinatorWorks", "token-ring", "tree"];

// One launch per size runs every case under the four kinds of pool, one after the other on one pool per kind
// (so each run is a new phase of that pool and must count only its own tasks).
for (const n of [1, 2, 4]) {
  test(`results: returned values reduced into run's result, the same on every rank, ${n} rank${n > 1 ? "s" : ""}`, async (t) => {
    const r = await scenario(n, ["results"]);
    t.is(r.code, 0, r.stderr);
    const cases = Object.keys(EXPECTED);
    t.is(r.results.length, CONFIGS.length * (cases.length + 1), r.stdout);
    for (const config of CONFIGS) {
      for (const name of cases) {
        const res = r.results.find((x) => x.config === config && x.case === name);
        const want = EXPECTED[name] as { result: unknown; executed: number };
        const label = `${config}, ${name}`;
        t.truthy(res, `${label}: no result line`);
        if (!res) continue;
        t.deepEqual(res.results, Array(n).fill(want.result), label);
        t.is(res.executed, want.executed, label);
        t.false(res.stopped, label);
      }
      const bad = r.results.find((x) => x.config === config && x.case === "bad-reduce");
      t.truthy(bad, `${config}: no bad-reduce line`);
      if (!bad) continue;
      t.is(bad.bad.length, n);
      for (const [rank, attempts] of (bad.bad as { reduce: unknown; sync: boolean; outcome: string }[][]).entries()) {
        const label = `${config}, rank ${rank}`;
        t.deepEqual(
          attempts.map((a) => [a.reduce, a.sync]),
          [
            ["avg", false],
            [42, false],
          ],
          `${label}: run rejects, it does not throw`,
        );
        t.regex(
          attempts[0]?.outcome ?? "",
          /^InvalidArgumentError WP_INVALID_ARGUMENT: run: option `reduce`.*"avg"/,
          label,
        );
        t.regex(
          attempts[1]?.outcome ?? "",
          /^InvalidArgumentError WP_INVALID_ARGUMENT: run: option `reduce`.*42/,
          label,
        );
      }
      t.deepEqual(bad.after, Array(n).fill(5), `${config}: the pool runs after a bad reduce`);
    }
  });
}

// Chaos delays every pool message by a random 0-3 ms, so a later message overtakes an earlier one; partial
// results must still all arrive. Flat tasks dealt by the coordinator make workers send many statuses.
test("results under chaos: distributed pools (token ring, tree) lose no partial result", async (t) => {
  const r = await scenario(3, ["chaos-results", "token-ring,tree", "20", "200"]);
  t.is(r.code, 0, r.stderr);
  t.deepEqual(r.results, [
    { config: "token-ring", runs: 20, executed: 4000, wrong: [] },
    { config: "tree", runs: 20, executed: 4000, wrong: [] },
  ]);
});

// Found by this test: the coordinator used to decide termination from each worker's latest status alone, so
// when that status overtook the one before it (chaos), the earlier one's partial result was lost (e.g. 198 of
// 200). It now also waits for every status up to the latest.
test("results under chaos: centralized pools lose no partial result when statuses overtake each other", async (t) => {
  const r = await scenario(3, ["chaos-results", "centralized,coordinatorWorks", "40", "200"]);
  t.is(r.code, 0, r.stderr);
  t.deepEqual(r.results, [
    { config: "centralized", runs: 40, executed: 8000, wrong: [] },
    { config: "coordinatorWorks", runs: 40, executed: 8000, wrong: [] },
  ]);
});

// ctx.stop ends the run on every rank with the stopping task's value; the pool runs again afterwards; a shared
// bound improved on one rank reaches the others (an improvement can still be on its way when run resolves
// elsewhere, so only the best over the ranks is certain).
for (const [n, pool] of [
  [1, "centralized"],
  [3, "centralized"],
  [2, "centralized,coordinatorWorks=true"],
  [3, "distributed"],
  [3, "distributed,termination=tree"],
] as const) {
  test(`ctx.stop and pool.bound on ${n} rank${n > 1 ? "s" : ""} under ${pool}`, async (t) => {
    const r = await run(["-n", String(n), "--timeout", "60", "--pool", pool, fixture("pool-stop.ts")]);
    t.is(r.code, 0, r.stderr);
    const lines = r.stdout.split("\n").filter((l) => l.includes("result "));
    t.is(lines.length, n);
    for (const line of lines) {
      const v = JSON.parse(line.slice(line.indexOf("result ") + 7));
      t.like(v, { stopped: true, result: { found: 5000 }, again: 999, againStopped: false });
      t.true(v.best >= 1);
    }
    const bests = lines.map((l) => JSON.parse(l.slice(l.indexOf("result ") + 7)).best as number);
    t.true(Math.max(...bests) >= 5000, `bests ${bests}`);
  });
}

// A stop drops what is queued: the run's one stopping task is a rank's first, every other task waits for good, so
// each rank starts at most its `concurrency` (the centralized coordinator none) of the 200 queued, and the run ends.
for (const [n, pool] of [
  [1, "centralized"],
  [3, "centralized"],
  [3, "centralized,retries=1"],
  [2, "centralized,coordinatorWorks=true"],
  [3, "distributed"],
  [3, "distributed,termination=tree"],
  [3, "distributed,initiation=sender"],
] as const) {
  test(`ctx.stop from an async handler drops the queued tasks on ${n} rank${n > 1 ? "s" : ""} under ${pool}`, async (t) => {
    const r = await run(["-n", String(n), "--timeout", "60", "--pool", pool, fixture("pool-stop-queued.ts")]);
    t.is(r.code, 0, r.stderr);
    const lines = r.stdout.split("\n").filter((l) => l.includes("result "));
    t.is(lines.length, n);
    let started = 0;
    for (const line of lines) {
      const v = JSON.parse(line.slice(line.indexOf("result ") + 7));
      t.like(v, { stopped: true, result: 42 });
      t.true(v.started <= v.concurrency, line);
      started += v.started;
    }
    t.true(started >= 1 && started <= 16 * n && started < 200, `started ${started} of 200`);
  });
}
