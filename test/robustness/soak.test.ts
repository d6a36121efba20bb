// A short soak in the test suite (test/robustness/soak.ts; `npx tsx test/robustness/soak.ts 200` for the long
// one): jobs of every reference app under random pools and rank counts, a rank killed in a quarter of them.
import test from "ava";
import { soak } from "./soak.ts";

test("soak: every job ends in bounded time with the right status and message, and leaves nothing behind", async (t) => {
  const report = await soak(16, 7, 0.25);
  t.log(JSON.stringify({ ...report, failures: report.failures.length }));
  t.deepEqual(
    report.failures.map((f) => `${JSON.stringify(f.job)}: ${f.problems.join("; ")}`),
    [],
  );
  t.true(report.faultsInjected >= 2, `${report.faultsInjected} faults injected`);
  t.true(report.killsLanded >= 1, "no kill landed before its job ended");
  t.is(report.leftoverProcesses, 0);
  t.is(report.leftoverFolders, 0);
});
