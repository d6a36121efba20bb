// Apps started by Slurm's `srun -n 4 node app.ts`, with no `workpool launch`, in a private one-node cluster
// (test/helpers/slurm.ts): the ranks find their rank in SLURM_PROCID/SLURM_NTASKS (or PMI_RANK/PMI_SIZE), and
// with WORKPOOL_KEY set rank 0 serves the rendezvous at the port derived from the job and step ids, without it
// through a file in the temporary folder (lib/comm/foreign.ts). Skipped with the reason where Slurm is not
// installed; failed instead under CI=true.
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { meetingFileName, slurmRendezvousPort } from "../../lib/comm/meeting-plan.ts";
import { formatJobKey, makeJobKey } from "../../lib/comm/job-key.ts";
import { tempFolder } from "../helpers/folders.ts";
import { FOREIGN_HELLO, NODE, oneJobOfFour, shortestPaths, throwing, twoJobsAtOnce, uts } from "../helpers/foreign.ts";
import { needs } from "../helpers/needs.ts";
import type { RunResult } from "../helpers/run.ts";
import { shared } from "../helpers/shared.ts";
import { slurmAvailable, startSlurm } from "../helpers/slurm.ts";

/** A job key, as a user exports it (`export WORKPOOL_KEY=$(npx workpool keygen)`); srun passes it on. */
const KEYED = { WORKPOOL_KEY: formatJobKey(makeJobKey()) };

const withSlurm = needs(test, slurmAvailable());

/** The cluster this file's tests share, started when the first of them asks for it. */
const slurm = shared(test, startSlurm, (cluster) => cluster.stop());

/** `srun [options] -n N node ... argv...` to the end, `env` added to srun's (and so to the tasks'). */
async function srun(
  n: number,
  argv: readonly string[],
  env: Record<string, string> = {},
  options: readonly string[] = [],
): Promise<RunResult> {
  return (await slurm()).srun([...options, "-n", String(n), ...NODE, ...argv], { env });
}

/** The port of `job` (SLURM_JOB_ID.SLURM_STEP_ID, the job id the ranks report without PMIx) at 127.0.0.1. */
function derivedRendezvous(job: string): string {
  const [jobId, stepId] = job.split(".").map(Number);
  return `tcp://127.0.0.1:${slurmRendezvousPort(jobId as number, stepId as number)}`;
}

withSlurm("srun -n 4 with WORKPOOL_KEY: one job of 4 ranks, meeting at the port of the job and step ids", async (t) => {
  const first = oneJobOfFour(t, await srun(4, [FOREIGN_HELLO], KEYED));
  t.regex(first.job, /^\d+\.0$/);
  t.is(first.rendezvous, derivedRendezvous(first.job));
});

withSlurm("srun -n 4 without WORKPOOL_KEY: one job, meeting through a file in the temporary folder", async (t) => {
  const first = oneJobOfFour(t, await srun(4, [FOREIGN_HELLO]));
  t.regex(first.rendezvous, /^tcp:\/\/127\.0\.0\.1:\d+$/);
  t.false(existsSync(join(tmpdir(), meetingFileName(first.job))), "rank 0 removes the rendezvous file");
});

withSlurm("srun --mpi=pmi2 -n 4: the ranks come from PMI_RANK and PMI_SIZE", async (t) => {
  const first = oneJobOfFour(t, await srun(4, [FOREIGN_HELLO], KEYED, ["--mpi=pmi2"]));
  t.regex(first.rendezvous, /^tcp:\/\/127\.0\.0\.1:\d+$/);
});

for (const pool of ["centralized", "distributed"]) {
  withSlurm(`srun -n 4 apps/uts --verify, WORKPOOL_POOL=${pool}`, async (t) => {
    uts.check(t, await srun(4, uts.argv, { ...KEYED, WORKPOOL_POOL: pool }), pool);
  });
}

withSlurm("srun -n 4 apps/shortest-paths --verify on its default generated grid", async (t) => {
  shortestPaths.check(t, await srun(4, shortestPaths.argv, KEYED));
});

withSlurm("srun --kill-on-bad-exit=1 -n 4: a rank that throws makes srun exit non-zero, no rank left", async (t) => {
  await throwing.check(t, await srun(4, throwing.argv, KEYED, ["--kill-on-bad-exit=1"]));
});

withSlurm("two srun jobs at once, meeting through files in the same folder, both succeed", async (t) => {
  await twoJobsAtOnce(t, tempFolder(t, "wp-slurm-test-"), (env) => srun(4, [FOREIGN_HELLO], env));
});
