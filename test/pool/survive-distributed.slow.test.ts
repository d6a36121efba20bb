/**
 * A distributed pool with `retries` survives the death of ranks other than the root (lib/pool/distributed/
 * resilient.ts), with real ranks through the launcher: ranks SIGKILLed or SIGSTOPped at seeded points of a task
 * tree whose exact node count rank 0 knows (test/fixtures/pool-survive.ts), under random stealing and
 * lifelines, with either termination option. Every such run must end 0 with the exact count and one launcher
 * line naming each dead rank; the root's death brings the job down, leaving no process behind. The seeds and
 * pools are in the test titles: a failure replays with
 * `workpool launch -n N test/fixtures/pool-survive.ts SCENARIO SEED 1 POOL`.
 */
import test from "ava";
import { linesOf } from "../helpers/run.ts";
import { waitUntilGone } from "../helpers/pids.ts";
import { checkOneKill, runSurvive } from "../helpers/survive.ts";
const POOLS = ["receiver", "lifeline", "receiver-tree", "lifeline-tree"] as const;

function survive(n: number, scenario: string, seed: number, pool: string, extra: string[] = []) {
  return runSurvive(n, extra, [scenario, String(seed), "1", pool]);
}

for (let seed = 1; seed <= 20; seed++) {
  const pool = POOLS[seed % POOLS.length] as string;
  test(`seed ${seed}, ${pool}: a rank SIGKILLed mid-run on 4 ranks; the result is exact`, async (t) => {
    const r = await survive(4, "kill", seed, pool);
    checkOneKill(t, r, seed);
  });
}

for (const [seed, pool] of [
  [3, "receiver"],
  [8, "lifeline-tree"],
] as const) {
  test(`seed ${seed}, ${pool}: 2 of 4 ranks SIGKILLed; the result is exact`, async (t) => {
    const r = await survive(5, "kill2", seed, pool);
    t.is(r.code, 0, r.stderr);
    t.is(r.result?.result, r.result?.expected, JSON.stringify(r.result));
    t.is(r.deaths.length, 2, r.stderr);
    t.is(r.result?.lost, 2);
  });
}

test("every rank but the root killed, one after another: the root finishes alone, exact", async (t) => {
  const r = await survive(4, "all", 1, "lifeline");
  t.is(r.code, 0, r.stderr);
  t.is(r.result?.result, r.result?.expected, JSON.stringify(r.result));
  t.is(r.deaths.length, 3, r.stderr);
});

test("a SIGSTOPped rank is found by the heartbeat, killed, and its tasks re-dealt; the result is exact", async (t) => {
  const r = await survive(4, "stop", 5, "receiver-tree", ["--heartbeat", "2"]);
  t.is(r.code, 0, r.stderr);
  t.is(r.result?.result, r.result?.expected, JSON.stringify(r.result));
  t.is(r.deaths.length, 1, r.stderr);
  t.regex(r.deaths[0] as string, /^workpool: rank 3 died \(sent no heartbeat for 2 s\)/);
  t.deepEqual(await waitUntilGone(r.pids), []);
});

test("the root's death brings the job down, naming it, and leaves no rank behind", async (t) => {
  const r = await survive(4, "coordinator", 1, "receiver");
  t.is(r.code, 137, r.stderr);
  t.regex(linesOf(r.stderr).at(-1) as string, /^workpool: rank 0 failed \(killed by SIGKILL\)/);
  t.is(r.pids.length, 4, r.stdout);
  t.deepEqual(await waitUntilGone(r.pids), []);
});
