/**
 * Issue 30: survivors go on. `apps/uts --repeat 3` under a pool with `retries` loses a rank in its second run and
 * still verifies the counts: the runs start on a barrier of the survivors (World#shrink), not on the world's
 * barrier, which a death ends for good. The rank is killed once it has run a task of that run
 * (test/fixtures/working-rank.mjs), with the app unchanged.
 */
import { pathToFileURL } from "node:url";
import test from "ava";
import { fixture, launch as start, linesOf, ok } from "../helpers/run.ts";

for (const [pool, mode] of [
  ["distributed,retries=1", "distributed"],
  ["centralized,retries=2", "centralized"],
] as const) {
  test(`uts --repeat 3, ${pool}: rank 1 killed in the second run; the app verifies the counts`, async (t) => {
    const hook = `--import=${pathToFileURL(fixture("working-rank.mjs")).href}`;
    const args = ["-n", "4", "--pool", pool, "--node-arg", hook, "-x", "WORKING_RANK=1", "-x", "WORKING_RUN=2"];
    const job = start([...args, "apps/uts", "--tree", "T1XS", "--repeat", "3", "--verify"]);
    const [working] = await job.lines(/^\[1\] working 1 \d+$/, 1);
    process.kill(Number(working?.split(" ").at(-1)), "SIGKILL");
    const r = await job.result;
    ok(t, r);
    t.regex(r.stdout, new RegExp(`\\[0\\] uts T1XS: 1031269 nodes, 825408 leaves, depth 9 \\(${mode}, 4 ranks, `));
    t.true(
      linesOf(r.stderr).some((l) => /^\[0\] uts: verified: 1031269 nodes/.test(l)),
      r.stderr,
    );
    t.true(
      linesOf(r.stderr).some((l) => l.startsWith("workpool: rank 1 died (killed by SIGKILL); the job go")),
      r.stderr,
    );
  });
}
