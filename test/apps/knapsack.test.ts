import test from "ava";
import { join } from "node:path";
import { ROOT, run } from "../helpers/run.ts";

const KNAPSACK = join(ROOT, "examples", "knapsack.ts");

// The branch and bound example under every pool: the optimum it finds (through the shared bound) is the one
// dynamic programming finds, and every rank agreed on it.
for (const [n, pool] of [
  [1, "centralized"],
  [2, "distributed"],
  [3, "distributed,termination=tree"],
  [3, "centralized"],
  [2, "centralized,coordinatorWorks=true"],
] as const) {
  test(`knapsack example: the optimum on ${n} ranks under ${pool}`, async (t) => {
    const r = await run(["-n", String(n), "--timeout", "60", "--pool", pool, KNAPSACK, "--items", "30", "--verify"]);
    t.is(r.code, 0, r.stderr);
    t.regex(r.stdout, /knapsack: 30 items, capacity \d+: best value \d+, \d+ nodes explored/);
    t.regex(r.stderr, /verified: \d+ is the optimum/);
  });
}

test("knapsack example: a bad option is one line and status 2", async (t) => {
  const r = await run(["-n", "1", KNAPSACK, "--items", "many"]);
  t.is(r.code, 2);
  t.regex(r.stderr, /--items must be a positive integer; got many/);
});
