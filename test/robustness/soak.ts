/**
 * The soak: back-to-back jobs of the reference apps under random pools and rank counts, with a rank killed
 * (SIGKILL) in a random share of them. Every job must end within a bounded time with the right status and
 * message (a killed rank: `workpool: rank R failed (killed by SIGKILL)`, status 137; otherwise status 0 and
 * the app's verified result), and leave no process and no job folder behind.
 *
 *   npx tsx test/robustness/soak.ts [JOBS] [SEED]      (default 200 jobs, seed 1)
 *
 * test/robustness/soak.test.ts runs a short one in the test suite.
 */
import { existsSync, readFileSync } from "node:fs";
import { seededRandom } from "../../lib/pool/partner/random.ts";
import { defaultPools } from "../../launcher/compare/options.ts";
import { childrenOf, isAlive, until } from "../helpers/pids.ts";
import { launch } from "../helpers/run.ts";

export interface SoakJob {
  readonly app: string;
  readonly args: readonly string[];
  readonly np: number;
  readonly pool: string;
  /** Kill one rank this long (ms) after it started; undefined: no fault. */
  readonly killAfterMs: number | undefined;
}

export interface SoakOutcome {
  readonly job: SoakJob;
  readonly ms: number;
  /** The rank killed (undefined for a warm rank), when the kill landed (the job may have ended first). */
  readonly killed: { readonly rank: number | undefined } | undefined;
  /** Empty when the job ended as it should. */
  readonly problems: string[];
}

export interface SoakReport {
  readonly jobs: number;
  readonly faultsInjected: number;
  readonly killsLanded: number;
  readonly maxMs: number;
  readonly leftoverProcesses: number;
  readonly leftoverFolders: number;
  readonly failures: SoakOutcome[];
}

/** The bound on a job's time, faults included (generous for a loaded 2-core machine). */
export const JOB_DEADLINE_MS = 60_000;

const APPS: readonly { app: string; args: readonly string[]; ok: RegExp }[] = [
  { app: "apps/uts", args: ["--tree", "T1XXS", "--verify"], ok: /uts: verified/ },
  { app: "apps/shortest-paths", args: ["--generate", "grid:60x60", "--verify"], ok: /shortest-paths: verified/ },
  { app: "apps/block-matching", args: ["--generate", "96x64:3", "--verify"], ok: /block-matching: verified/ },
  { app: "examples/knapsack.ts", args: ["--items", "30", "--verify"], ok: /verified/ },
];

/** The jobs of a soak: app, pool, rank count and fault drawn from the seed. */
export function soakJobs(count: number, seed: number, faultShare = 0.1): SoakJob[] {
  const rnd = seededRandom(seed);
  const pools = defaultPools();
  const jobs: SoakJob[] = [];
  for (let i = 0; i < count; i++) {
    const a = APPS[Math.floor(rnd() * APPS.length)] as (typeof APPS)[number];
    const np = 1 + Math.floor(rnd() * 5);
    const pool = pools[Math.floor(rnd() * pools.length)] as string;
    const fault = rnd() < faultShare;
    jobs.push({ app: a.app, args: a.args, np, pool, killAfterMs: fault ? Math.floor(rnd() * 400) : undefined });
  }
  return jobs;
}

/** A rank's rank number and job folder, from its environment; undefined if it is not (or no longer) a rank. */
/**
 * A child of the launcher: the reaper (`sh -c REAPER reaper DIR`: the job folder), a rank started cold (its rank
 * and job folder in /proc/PID/environ), or a rank started warm (launcher/warm.ts: a node process whose environ
 * holds none of the job's variables, which came on a pipe, so its rank is not known here).
 */
type Child = { kind: "reaper"; dir: string } | { kind: "rank"; rank: number | undefined; dir: string | undefined };

function childInfo(pid: number): Child | undefined {
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    const words = cmdline.split("\0");
    if (words[0] === "/bin/sh" && words[3] === "reaper") return { kind: "reaper", dir: words[4] as string };
    const env = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
    const get = (k: string) => env.find((e) => e.startsWith(`${k}=`))?.slice(k.length + 1);
    const rank = get("WORKPOOL_RANK");
    if (rank !== undefined) return { kind: "rank", rank: Number(rank), dir: get("WORKPOOL_IPC_DIR") };
    return cmdline.startsWith(process.execPath) ? { kind: "rank", rank: undefined, dir: undefined } : undefined;
  } catch {
    return undefined;
  }
}

export async function runSoakJob(job: SoakJob, rnd: () => number): Promise<SoakOutcome> {
  const problems: string[] = [];
  const t0 = Date.now();
  const running = launch([
    "-n",
    String(job.np),
    "--pool",
    job.pool,
    "--timeout",
    String(JOB_DEADLINE_MS / 1000),
    job.app,
    ...job.args,
  ]);
  let ended = false;
  void running.result.then(() => {
    ended = true;
  });
  // Each rank's pid, with its rank where its environment tells (a cold rank; a warm one's is undefined).
  const ranks = new Map<number, number | undefined>();
  const folders = new Set<string>();
  const watch = () => {
    for (const pid of childrenOf(running.pid)) {
      if (ranks.has(pid)) continue;
      const child = childInfo(pid);
      if (child?.dir) folders.add(child.dir);
      if (child?.kind === "rank") ranks.set(pid, child.rank);
    }
  };
  let killed: { rank: number | undefined } | undefined;
  if (job.killAfterMs !== undefined) {
    // Wait for the ranks to exist (the fault needs a victim), then kill one after the drawn delay.
    await until(
      () => {
        watch();
        return ended || ranks.size === job.np;
      },
      5,
      JOB_DEADLINE_MS,
    );
    const pids = [...ranks.keys()];
    const victim = pids[Math.floor(rnd() * pids.length)];
    if (victim !== undefined && !ended) {
      // The fault's timing is drawn, not waited for: the kill lands at a random point of the run.
      await new Promise((resolve) => setTimeout(resolve, job.killAfterMs));
      if (!ended && isAlive(victim)) {
        try {
          process.kill(victim, "SIGKILL");
          killed = { rank: ranks.get(victim) };
        } catch {
          /* it exited meanwhile */
        }
      }
    }
  } else {
    await until(
      () => {
        watch();
        return ended || ranks.size === job.np;
      },
      5,
      JOB_DEADLINE_MS,
    );
  }
  const r = await running.result;
  const ms = Date.now() - t0;
  if (ms > JOB_DEADLINE_MS) problems.push(`took ${ms} ms`);
  const lastLine = r.stderr.trimEnd().split("\n").at(-1) ?? "";
  if (killed !== undefined && !(r.code === 0 && /verified/.test(r.stdout + r.stderr))) {
    // The kill landed before the job ended: the job fails naming that rank (a warm one: a rank no cold one is).
    const named = /^workpool: rank (\d+) failed \(killed by SIGKILL\)$/.exec(lastLine);
    const cold = new Set([...ranks.values()].filter((rank) => rank !== undefined));
    const expected = killed.rank === undefined ? "a warm rank" : `rank ${killed.rank}`;
    if (r.code !== 137) problems.push(`status ${r.code}, expected 137 after killing ${expected}`);
    const right =
      named !== null && (killed.rank === undefined ? !cold.has(Number(named[1])) : Number(named[1]) === killed.rank);
    if (!right) problems.push(`last stderr line ${JSON.stringify(lastLine)}, expected ${expected} named`);
  } else if (killed === undefined) {
    const app = APPS.find((a) => a.app === job.app) as (typeof APPS)[number];
    if (r.code !== 0) problems.push(`status ${r.code}: ${lastLine}`);
    else if (!app.ok.test(r.stdout + r.stderr)) problems.push("no verified result");
  }
  // Nothing left behind: every rank gone (the launcher has exited), every job folder removed.
  const gone = await until(() => [...ranks.keys()].every((pid) => !isAlive(pid)), 20, 10_000);
  if (!gone) problems.push(`ranks still alive: ${[...ranks.keys()].filter(isAlive).join(", ")}`);
  for (const dir of folders) if (existsSync(dir)) problems.push(`job folder left: ${dir}`);
  return { job, ms, killed, problems };
}

export async function soak(count: number, seed: number, faultShare = 0.1): Promise<SoakReport> {
  const jobs = soakJobs(count, seed, faultShare);
  const rnd = seededRandom(seed + 1);
  const failures: SoakOutcome[] = [];
  let maxMs = 0;
  let killsLanded = 0;
  let leftoverProcesses = 0;
  let leftoverFolders = 0;
  for (const job of jobs) {
    const out = await runSoakJob(job, rnd);
    maxMs = Math.max(maxMs, out.ms);
    if (out.killed !== undefined) killsLanded++;
    leftoverProcesses += out.problems.filter((p) => p.startsWith("ranks still alive")).length;
    leftoverFolders += out.problems.filter((p) => p.startsWith("job folder left")).length;
    if (out.problems.length > 0) failures.push(out);
  }
  return {
    jobs: jobs.length,
    faultsInjected: jobs.filter((j) => j.killAfterMs !== undefined).length,
    killsLanded,
    maxMs,
    leftoverProcesses,
    leftoverFolders,
    failures,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const count = Number(process.argv[2] ?? 200);
  const seed = Number(process.argv[3] ?? 1);
  const report = await soak(count, seed);
  for (const f of report.failures) console.log(`FAILED ${JSON.stringify(f.job)}: ${f.problems.join("; ")}`);
  const { failures, ...figures } = report;
  console.log(JSON.stringify({ ...figures, failures: failures.length }));
  process.exitCode = failures.length > 0 ? 1 : 0;
}
