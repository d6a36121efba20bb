// Apps started by Open MPI's `mpirun -n 4 node app.ts`, as mpi4py apps are, with no `workpool launch`: the ranks
// find their rank in OMPI_COMM_WORLD_*, rank 0 serves the rendezvous and the others learn where from a file in
// the temporary folder (every rank is on this machine), or at WORKPOOL_RENDEZVOUS with WORKPOOL_KEY
// (lib/comm/foreign.ts). Skipped with the reason where mpirun is not installed; failed instead under CI=true.
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test, { type ExecutionContext, type ImplementationFn } from "ava";
import { meetingFileName } from "../../lib/comm/foreign.ts";
import { formatJobKey, makeJobKey } from "../../lib/comm/keys.ts";
import { mpiAvailable, mpiEnv, mpirunCommand, runProgram } from "../helpers/mpi.ts";
import { parseReady, waitUntilGone } from "../helpers/pids.ts";
import { fixture, linesOf, type RunResult } from "../helpers/run.ts";

/** `node` running a TypeScript app from source, as `workpool launch` would, but started by mpirun. */
const NODE = [process.execPath, "--import", "tsx", "--conditions=workpool-source"];

/**
 * ava's `test` if `missing` (why mpirun cannot run here) is undefined; otherwise each test is skipped with the
 * reason in its title, or under CI=true fails with it.
 */
function launcherTest(missing: string | undefined): (title: string, implementation: ImplementationFn<[]>) => void {
  if (missing === undefined) return (title, implementation) => test(title, implementation);
  if (process.env.CI === "true") {
    return (title) => test(title, (t) => t.fail(`CI=true and ${missing}: .ci/run installs it`));
  }
  return (title, implementation) => test.skip(`${title} (skipped: ${missing})`, implementation);
}

const withMpi = launcherTest(mpiAvailable());

/** `mpirun -n N [-x NAME]... node ... argv...` to the end, `env` added to mpirun's (and so to the ranks'). */
function mpirun(n: number, argv: readonly string[], env: Record<string, string> = {}): Promise<RunResult> {
  const exports = Object.keys(env).flatMap((name) => ["-x", name]);
  return runProgram(mpirunCommand(n, [...exports, ...NODE, ...argv]), { env: mpiEnv(env) });
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

let scratch: string | undefined;
/** A new folder in this file's temporary folder (made on first use: ava runs no hooks if it skips every test). */
function folder(): string {
  scratch ??= mkdtempSync(join(tmpdir(), "wp-mpirun-test-"));
  return mkdtempSync(join(scratch, "job-"));
}
test.after.always(() => {
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

/** A TCP port nobody listens on now (closed again: ours to bind next). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  return address.port;
}

withMpi("mpirun -n 4: one job of 4 ranks that met through a file in the temporary folder, removed after", async (t) => {
  const r = await mpirun(4, [fixture("foreign-hello.ts")]);
  const first = oneJobOfFour(t, r);
  t.regex(first.rendezvous, /^tcp:\/\/127\.0\.0\.1:\d+$/);
  t.false(existsSync(join(tmpdir(), meetingFileName(first.job))), "rank 0 removes the rendezvous file");
});

withMpi("mpirun -n 4 with WORKPOOL_KEY and WORKPOOL_RENDEZVOUS: rank 0 serves at that address", async (t) => {
  const address = `tcp://127.0.0.1:${await freePort()}`;
  const dir = folder();
  const env = { WORKPOOL_KEY: formatJobKey(makeJobKey()), WORKPOOL_RENDEZVOUS: address, WORKPOOL_RENDEZVOUS_DIR: dir };
  const first = oneJobOfFour(t, await mpirun(4, [fixture("foreign-hello.ts")], env));
  t.is(first.rendezvous, address);
  t.deepEqual(readdirSync(dir), [], "no rendezvous file");
});

for (const pool of ["centralized", "distributed"]) {
  withMpi(`mpirun -n 4 apps/uts --verify, WORKPOOL_POOL=${pool}`, async (t) => {
    const r = await mpirun(4, ["apps/uts/main.ts", "--tree", "T1XXS", "--verify"], { WORKPOOL_POOL: pool });
    t.is(r.code, 0, r.stderr);
    t.regex(r.stdout, new RegExp(`^uts T1XXS: 16000 nodes, 12839 leaves, depth 6 \\(${pool}, 4 ranks, `, "m"));
    t.regex(r.stderr, /^uts: verified: 16000 nodes/m);
  });
}

withMpi("mpirun -n 4 apps/shortest-paths --verify on its default generated grid", async (t) => {
  const r = await mpirun(4, ["apps/shortest-paths/main.ts", "--verify"]);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /^shortest-paths: 360000 vertices, .* \((centralized|distributed), 4 ranks, /m);
  t.regex(r.stderr, /^shortest-paths: verified: all 360000 distances equal Dijkstra's/m);
});

withMpi("mpirun -n 4: a rank that throws makes mpirun exit non-zero, and no rank is left running", async (t) => {
  const r = await mpirun(4, [fixture("throw.ts"), "2"]);
  t.not(r.code, 0, r.stdout);
  t.regex(r.stderr, /boom on 2/);
  const ready = parseReady(linesOf(r.stdout).filter((l) => l.startsWith("ready ")));
  t.deepEqual(
    ready.map((x) => x.rank),
    [0, 1, 2, 3],
  );
  t.deepEqual(await waitUntilGone(ready.map((x) => x.pid)), []);
});

withMpi("two mpirun jobs at once, meeting in the same folder, both succeed", async (t) => {
  const dir = folder();
  const env = { WORKPOOL_RENDEZVOUS_DIR: dir };
  const [a, b] = await Promise.all([0, 1].map(() => mpirun(4, [fixture("foreign-hello.ts")], env)));
  const jobs = [oneJobOfFour(t, a as RunResult).job, oneJobOfFour(t, b as RunResult).job];
  t.not(jobs[0], jobs[1]);
  t.deepEqual(readdirSync(dir), [], "both rendezvous files removed");
});
