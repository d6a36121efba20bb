// Apps started by Open MPI's `mpirun -n 4 node app.ts`, as mpi4py apps are, with no `workpool launch`: the ranks
// find their rank in OMPI_COMM_WORLD_*, rank 0 serves the rendezvous and the others learn where from a file in
// the temporary folder (every rank is on this machine), or at WORKPOOL_RENDEZVOUS with WORKPOOL_KEY
// (lib/comm/foreign.ts). Skipped with the reason where mpirun is not installed; failed instead under CI=true.
import { existsSync, readdirSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { meetingFileName } from "../../lib/comm/meeting-plan.ts";
import { formatJobKey, makeJobKey } from "../../lib/comm/job-key.ts";
import { tempFolder } from "../helpers/folders.ts";
import { FOREIGN_HELLO, NODE, oneJobOfFour, shortestPaths, throwing, twoJobsAtOnce, uts } from "../helpers/foreign.ts";
import { mpiAvailable, mpiEnv, mpirunCommand } from "../helpers/mpi.ts";
import { needs } from "../helpers/needs.ts";
import { runProgram } from "../helpers/program.ts";
import type { RunResult } from "../helpers/run.ts";

const withMpi = needs(test, mpiAvailable());

/** `mpirun -n N [-x NAME]... node ... argv...` to the end, `env` added to mpirun's (and so to the ranks'). */
function mpirun(n: number, argv: readonly string[], env: Record<string, string> = {}): Promise<RunResult> {
  const exports = Object.keys(env).flatMap((name) => ["-x", name]);
  return runProgram(mpirunCommand(n, [...exports, ...NODE, ...argv]), { env: mpiEnv(env) });
}

const TEMP = "wp-mpirun-test-";

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
  const r = await mpirun(4, [FOREIGN_HELLO]);
  const first = oneJobOfFour(t, r);
  t.regex(first.rendezvous, /^tcp:\/\/127\.0\.0\.1:\d+$/);
  t.false(existsSync(join(tmpdir(), meetingFileName(first.job))), "rank 0 removes the rendezvous file");
});

withMpi("mpirun -n 4 with WORKPOOL_KEY and WORKPOOL_RENDEZVOUS: rank 0 serves at that address", async (t) => {
  const address = `tcp://127.0.0.1:${await freePort()}`;
  const dir = tempFolder(t, TEMP);
  const env = { WORKPOOL_KEY: formatJobKey(makeJobKey()), WORKPOOL_RENDEZVOUS: address, WORKPOOL_RENDEZVOUS_DIR: dir };
  const first = oneJobOfFour(t, await mpirun(4, [FOREIGN_HELLO], env));
  t.is(first.rendezvous, address);
  t.deepEqual(readdirSync(dir), [], "no rendezvous file");
});

for (const pool of ["centralized", "distributed"]) {
  withMpi(`mpirun -n 4 apps/uts --verify, WORKPOOL_POOL=${pool}`, async (t) => {
    uts.check(t, await mpirun(4, uts.argv, { WORKPOOL_POOL: pool }), pool);
  });
}

withMpi("mpirun -n 4 apps/shortest-paths --verify on its default generated grid", async (t) => {
  shortestPaths.check(t, await mpirun(4, shortestPaths.argv));
});

withMpi("mpirun -n 4: a rank that throws makes mpirun exit non-zero, and no rank is left running", async (t) => {
  await throwing.check(t, await mpirun(4, throwing.argv));
});

withMpi("two mpirun jobs at once, meeting in the same folder, both succeed", async (t) => {
  await twoJobsAtOnce(t, tempFolder(t, TEMP), (env) => mpirun(4, [FOREIGN_HELLO], env));
});
