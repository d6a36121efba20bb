// The launchers workpool is to run under, checked on their own (no workpool code runs): Open MPI's mpirun
// (test/helpers/mpi.ts) and srun in a private one-node Slurm (test/helpers/slurm.ts) start N plain Node.js tasks
// and tell each its rank and the job's size. Each test prints (t.log) the launcher variables the tasks got, for
// whoever writes the code that reads them. Skipped with the reason where a launcher is not installed; failed
// instead under CI=true, so that a CI machine without them does not pass silently.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import test, { type ExecutionContext } from "ava";
import { tempFolder } from "../helpers/folders.ts";
import { MPI_ENV, mpiAvailable, mpiEnv, mpirunCommand } from "../helpers/mpi.ts";
import { needs } from "../helpers/needs.ts";
import { runProgram } from "../helpers/program.ts";
import { linesOf } from "../helpers/run.ts";
import { shared } from "../helpers/shared.ts";
import { slurmAvailable, startSlurm } from "../helpers/slurm.ts";

const withMpi = needs(test, mpiAvailable());
const withSlurm = needs(test, slurmAvailable());

/** The cluster the Slurm tests share, started when the first of them asks for it. */
const slurm = shared(test, startSlurm, (cluster) => cluster.stop());

/** Names of the variables a launcher may set for its tasks: Open MPI's, PMI's and PMIx's, Slurm's. */
const LAUNCHER_VARIABLE = /^(OMPI_|PMI|SLURM)/;

/**
 * `node -e PROBE OUT NAME...`: prints the values of the variables NAME... on one line, and writes all its launcher
 * variables to OUT/<value of the first NAME>.json (to a file, so that long lines of tasks cannot interleave).
 */
const PROBE = `
const [out, ...names] = process.argv.slice(1);
const vars = Object.fromEntries(Object.entries(process.env).filter(([k]) => ${LAUNCHER_VARIABLE}.test(k)));
require("node:fs").writeFileSync(require("node:path").join(out, process.env[names[0]] + ".json"), JSON.stringify(vars));
console.log(names.map((n) => process.env[n]).join(" "));`;

interface Probe {
  /** `node -e PROBE OUT NAME...`, OUT a new folder. */
  readonly command: readonly string[];
  /** What tasks 0..n-1 wrote to OUT. */
  read(n: number): Record<string, string>[];
}

/** The command that runs PROBE for `names`, writing into a new folder removed when the test ends. */
function probe(t: ExecutionContext, names: readonly string[]): Probe {
  const out = tempFolder(t, "wp-launchers-test-");
  return {
    command: [process.execPath, "-e", PROBE, out, ...names],
    read: (n) => {
      const files = [...Array(n).keys()].map((rank) => `${rank}.json`);
      if (readdirSync(out).sort().join() !== [...files].sort().join()) {
        throw new Error(`expected ${files.join(", ")} in ${out}; got ${readdirSync(out).join(", ")}`);
      }
      return files.map((f) => JSON.parse(readFileSync(join(out, f), "utf8")) as Record<string, string>);
    },
  };
}

/**
 * Logs task 0's launcher variables, one a line, sorted; `*` marks those whose value differs between tasks (or
 * that some tasks lack), `+` those this test set itself rather than the launcher. Values are put on one line and
 * shortened.
 */
function logVariables(t: ExecutionContext, label: string, tasks: Record<string, string>[], ours: readonly string[]) {
  const first = tasks[0] ?? {};
  const names = [...new Set(tasks.flatMap((v) => Object.keys(v)))].sort();
  const differ = (name: string): boolean => tasks.some((v) => v[name] !== first[name]);
  const show = (value: string | undefined): string => {
    if (value === undefined) return "(unset in task 0)";
    const line = value.replace(/\s+/g, " ");
    return line.length > 100 ? `${line.slice(0, 97)}...` : line;
  };
  t.log(
    `${label}: the launcher variables of task 0 of ${tasks.length} (* differs between tasks, + set by this test)\n` +
      names.map((n) => `${differ(n) ? "*" : " "}${ours.includes(n) ? "+" : " "} ${n}=${show(first[n])}`).join("\n"),
  );
}

withMpi("mpirun -n 4: OMPI_COMM_WORLD_RANK 0..3 once each, OMPI_COMM_WORLD_SIZE 4, nothing on stderr", async (t) => {
  const p = probe(t, ["OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"]);
  const result = await runProgram(mpirunCommand(4, p.command), { env: mpiEnv() });
  t.is(result.code, 0, result.stderr);
  t.deepEqual(linesOf(result.stdout).sort(), ["0 4", "1 4", "2 4", "3 4"]);
  t.is(result.stderr, "");
  logVariables(t, "mpirun -n 4", p.read(4), Object.keys(MPI_ENV));
});

withSlurm("srun -n 4: SLURM_PROCID 0..3 once each, SLURM_NTASKS 4, SLURM_STEP_NODELIST the node", async (t) => {
  const cluster = await slurm();
  const p = probe(t, ["SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_NODELIST"]);
  const result = await cluster.srun(["-n", "4", ...p.command]);
  t.is(result.code, 0, result.stderr);
  t.deepEqual(
    linesOf(result.stdout).sort(),
    [0, 1, 2, 3].map((rank) => `${rank} 4 ${cluster.node}`),
  );
  logVariables(t, "srun -n 4 (MpiDefault=none)", p.read(4), ["SLURM_CONF"]);
});

withSlurm("srun -n 4: a task that exits with 3 makes srun exit with 3", async (t) => {
  const cluster = await slurm();
  const exit3 = `process.exitCode = process.env.SLURM_PROCID === "2" ? 3 : 0;`;
  const result = await cluster.srun(["-n", "4", process.execPath, "-e", exit3]);
  t.is(result.code, 3, result.stderr);
  t.regex(result.stderr, /task 2: Exited with exit code 3/);
});

for (const [mpi, rank] of [
  ["pmi2", "PMI_RANK"],
  ["pmix", "PMIX_RANK"],
] as const) {
  withSlurm(`srun --mpi=${mpi} -n 2: ${rank} is SLURM_PROCID`, async (t) => {
    const cluster = await slurm();
    const p = probe(t, ["SLURM_PROCID", rank]);
    const result = await cluster.srun([`--mpi=${mpi}`, "-n", "2", ...p.command]);
    t.is(result.code, 0, result.stderr);
    t.deepEqual(linesOf(result.stdout).sort(), ["0 0", "1 1"]);
    logVariables(t, `srun --mpi=${mpi} -n 2`, p.read(2), ["SLURM_CONF"]);
  });
}
