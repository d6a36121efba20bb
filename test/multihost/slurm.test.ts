// Apps started by Slurm's `srun -n 4 node app.ts`, with no `workpool launch`, in a private one-node cluster
// (test/helpers/slurm.ts): the ranks find their rank in SLURM_PROCID/SLURM_NTASKS (or PMI_RANK/PMI_SIZE), and
// with WORKPOOL_KEY set rank 0 serves the rendezvous at the port derived from the job and step ids, without it
// through a file in the temporary folder (lib/comm/foreign.ts). Skipped with the reason where Slurm is not
// installed; failed instead under CI=true.
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test, { type ExecutionContext, type ImplementationFn } from "ava";
import { meetingFileName, slurmRendezvousPort } from "../../lib/comm/foreign.ts";
import { formatJobKey, makeJobKey } from "../../lib/comm/keys.ts";
import { parseReady, waitUntilGone } from "../helpers/pids.ts";
import { fixture, linesOf, type RunResult } from "../helpers/run.ts";
import { type Slurm, slurmAvailable, startSlurm } from "../helpers/slurm.ts";

/** `node` running a TypeScript app from source, as `workpool launch` would, but started by srun. */
const NODE = [process.execPath, "--import", "tsx", "--conditions=workpool-source"];
/** A job key, as a user exports it (`export WORKPOOL_KEY=$(npx workpool keygen)`); srun passes it on. */
const KEYED = { WORKPOOL_KEY: formatJobKey(makeJobKey()) };

/**
 * ava's `test` if `missing` (why Slurm cannot run here) is undefined; otherwise each test is skipped with the
 * reason in its title, or under CI=true fails with it.
 */
function launcherTest(missing: string | undefined): (title: string, implementation: ImplementationFn<[]>) => void {
  if (missing === undefined) return (title, implementation) => test(title, implementation);
  if (process.env.CI === "true") {
    return (title) => test(title, (t) => t.fail(`CI=true and ${missing}: .ci/run installs it`));
  }
  return (title, implementation) => test.skip(`${title} (skipped: ${missing})`, implementation);
}

const withSlurm = launcherTest(slurmAvailable());

let started: Promise<Slurm> | undefined;
/** The cluster this file's tests share, started when the first of them asks for it. */
function slurm(): Promise<Slurm> {
  return (started ??= startSlurm());
}
test.after.always(async () => {
  const cluster = await started?.catch(() => undefined);
  await cluster?.stop();
});

let scratch: string | undefined;
/** A new folder in this file's temporary folder (made on first use: ava runs no hooks if it skips every test). */
function folder(): string {
  scratch ??= mkdtempSync(join(tmpdir(), "wp-slurm-test-"));
  return mkdtempSync(join(scratch, "job-"));
}
test.after.always(() => {
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

/** `srun [options] -n N node ... argv...` to the end, `env` added to srun's (and so to the tasks'). */
async function srun(
  n: number,
  argv: readonly string[],
  env: Record<string, string> = {},
  options: readonly string[] = [],
): Promise<RunResult> {
  return (await slurm()).srun([...options, "-n", String(n), ...NODE, ...argv], { env });
}

/** One rank's line from test/fixtures/foreign-hello.ts. */
interface Hello {
  readonly rank: number;
  readonly size: number;
  readonly sum: number;
  readonly ranks: string;
  readonly job: string;
  readonly rendezvous: string;
  readonly transport: string;
}

const HELLO = /^foreign (\d+) (\d+) sum (\d+) ranks (\S+) pid \d+ job (\S+) rendezvous (\S+) transport (\S+)$/;

/** The lines of foreign-hello.ts in `stdout`, by rank. */
function hellos(stdout: string): Hello[] {
  return linesOf(stdout)
    .map((line) => HELLO.exec(line))
    .filter((m) => m !== null)
    .map((m) => ({
      rank: Number(m[1]),
      size: Number(m[2]),
      sum: Number(m[3]),
      ranks: m[4] as string,
      job: m[5] as string,
      rendezvous: m[6] as string,
      transport: m[7] as string,
    }))
    .sort((a, b) => a.rank - b.rank);
}

/** Checks that `r` is a successful run of foreign-hello.ts on 4 ranks of one job; returns rank 0's line. */
function oneJobOfFour(t: ExecutionContext, r: RunResult): Hello {
  t.is(r.code, 0, r.stderr);
  const lines = hellos(r.stdout);
  t.deepEqual(
    lines.map((h) => [h.rank, h.size, h.sum, h.ranks, h.transport]),
    [0, 1, 2, 3].map((rank) => [rank, 4, 6, "0,1,2,3", "tcp"]),
    r.stdout,
  );
  const [first] = lines;
  t.true(first !== undefined && lines.every((h) => h.job === first.job && h.rendezvous === first.rendezvous));
  return first as Hello;
}

/** The port of `job` (SLURM_JOB_ID.SLURM_STEP_ID, the job id the ranks report without PMIx) at 127.0.0.1. */
function derivedRendezvous(job: string): string {
  const [jobId, stepId] = job.split(".").map(Number);
  return `tcp://127.0.0.1:${slurmRendezvousPort(jobId as number, stepId as number)}`;
}

withSlurm("srun -n 4 with WORKPOOL_KEY: one job of 4 ranks, meeting at the port of the job and step ids", async (t) => {
  const first = oneJobOfFour(t, await srun(4, [fixture("foreign-hello.ts")], KEYED));
  t.regex(first.job, /^\d+\.0$/);
  t.is(first.rendezvous, derivedRendezvous(first.job));
});

withSlurm("srun -n 4 without WORKPOOL_KEY: one job, meeting through a file in the temporary folder", async (t) => {
  const first = oneJobOfFour(t, await srun(4, [fixture("foreign-hello.ts")]));
  t.regex(first.rendezvous, /^tcp:\/\/127\.0\.0\.1:\d+$/);
  t.false(existsSync(join(tmpdir(), meetingFileName(first.job))), "rank 0 removes the rendezvous file");
});

withSlurm("srun --mpi=pmi2 -n 4: the ranks come from PMI_RANK and PMI_SIZE", async (t) => {
  const first = oneJobOfFour(t, await srun(4, [fixture("foreign-hello.ts")], KEYED, ["--mpi=pmi2"]));
  t.regex(first.rendezvous, /^tcp:\/\/127\.0\.0\.1:\d+$/);
});

for (const pool of ["centralized", "distributed"]) {
  withSlurm(`srun -n 4 apps/uts --verify, WORKPOOL_POOL=${pool}`, async (t) => {
    const r = await srun(4, ["apps/uts/main.ts", "--tree", "T1XXS", "--verify"], { ...KEYED, WORKPOOL_POOL: pool });
    t.is(r.code, 0, r.stderr);
    t.regex(r.stdout, new RegExp(`^uts T1XXS: 16000 nodes, 12839 leaves, depth 6 \\(${pool}, 4 ranks, `, "m"));
    t.regex(r.stderr, /^uts: verified: 16000 nodes/m);
  });
}

withSlurm("srun -n 4 apps/shortest-paths --verify on its default generated grid", async (t) => {
  const r = await srun(4, ["apps/shortest-paths/main.ts", "--verify"], KEYED);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /^shortest-paths: 360000 vertices, .* \((centralized|distributed), 4 ranks, /m);
  t.regex(r.stderr, /^shortest-paths: verified: all 360000 distances equal Dijkstra's/m);
});

withSlurm("srun --kill-on-bad-exit=1 -n 4: a rank that throws makes srun exit non-zero, no rank left", async (t) => {
  const r = await srun(4, [fixture("throw.ts"), "2"], KEYED, ["--kill-on-bad-exit=1"]);
  t.not(r.code, 0, r.stdout);
  t.regex(r.stderr, /boom on 2/);
  const ready = parseReady(linesOf(r.stdout).filter((l) => l.startsWith("ready ")));
  t.deepEqual(
    ready.map((x) => x.rank),
    [0, 1, 2, 3],
  );
  t.deepEqual(await waitUntilGone(ready.map((x) => x.pid)), []);
});

withSlurm("two srun jobs at once, meeting through files in the same folder, both succeed", async (t) => {
  const dir = folder();
  const env = { WORKPOOL_RENDEZVOUS_DIR: dir };
  const [a, b] = await Promise.all([0, 1].map(() => srun(4, [fixture("foreign-hello.ts")], env)));
  const jobs = [oneJobOfFour(t, a as RunResult).job, oneJobOfFour(t, b as RunResult).job];
  t.not(jobs[0], jobs[1]);
  t.deepEqual(readdirSync(dir), [], "both rendezvous files removed");
});
