// A private one-node Slurm cluster for the tests of running under srun: its own MUNGE daemon, slurmctld and
// slurmd, all children of the test process, with every file in one temporary folder and ports of their own, so
// two test files can each start one at the same time. No system configuration (/etc/munge, /etc/slurm) is used
// and nothing under /etc, /run or /var is written.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { hostname, tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { findProgram } from "./mpi.ts";
import { waitUntilGone } from "./pids.ts";
import { launcherFreeEnv, runProgram } from "./program.ts";
import type { RunResult } from "./run.ts";

/**
 * CPUs the node declares when SlurmOptions.cpus is not given: more than a CI machine has, so `srun -n 8` runs
 * (a job of more tasks than the node's CPUs is refused unless it asks for `--overcommit`).
 */
export const DEFAULT_SLURM_CPUS = 8;
/** How long startSlurm waits for the node to become idle before it gives up (bounds a failing start only). */
const READY_DEADLINE_MS = 20_000;
/** How long stop() gives a daemon to exit on SIGTERM before it sends SIGKILL (bounds a failing stop only). */
const STOP_DEADLINE_MS = 10_000;
/** The programs a cluster needs, and the Debian packages that hold them. */
const PROGRAMS = ["munged", "slurmctld", "slurmd", "srun", "sinfo"] as const;
const PACKAGES = "munge slurmctld slurmd slurm-client";

export interface SlurmOptions {
  /**
   * CPUs the node declares. Slurm is told to believe it (`SlurmdParameters=config_overrides`) whatever the
   * machine has, so a job may ask for more tasks than there are cores; tasks are not bound to cores.
   * @default DEFAULT_SLURM_CPUS
   */
  readonly cpus?: number;
}

export interface SrunOptions {
  /** Variables added to Slurm.env for this srun (and so for its tasks). */
  readonly env?: NodeJS.ProcessEnv;
  /** @default the repository root */
  readonly cwd?: string;
}

export interface Slurm {
  /**
   * The environment for Slurm's clients (srun, sinfo, squeue, scancel): ours without any launcher's task
   * variables, plus SLURM_CONF naming this cluster's configuration. srun passes it on to the tasks.
   */
  readonly env: NodeJS.ProcessEnv;
  /** The one node's name: this machine's short host name, as SLURM_STEP_NODELIST and SLURMD_NODENAME show it. */
  readonly node: string;
  /** The private folder (mode 0700) with the configuration, the MUNGE key and socket, state and spool. */
  readonly dir: string;
  /**
   * Runs `srun args...` in this cluster to the end. Any number may run at once: they share the node's CPUs
   * (`OverSubscribe=FORCE`). Rejects only if srun cannot be started.
   */
  srun(args: readonly string[], options?: SrunOptions): Promise<RunResult>;
  /**
   * Stops the daemons, kills whatever is left of this cluster's jobs (any process whose environment holds this
   * SLURM_CONF: slurmstepd, tasks, a pending srun) and removes the folder. Calling it again returns the same promise.
   */
  stop(): Promise<void>;
}

/** Why startSlurm cannot work here (programs missing), or undefined if it can. */
export function slurmAvailable(): string | undefined {
  const missing = PROGRAMS.filter((p) => findProgram(p) === undefined);
  if (missing.length > 0) {
    const are = missing.length === 1 ? "is" : "are";
    return `${missing.join(", ")} ${are} not installed (Debian: apt-get install ${PACKAGES})`;
  }
  return undefined;
}

/** One daemon running in the foreground as our child, its output kept for error messages. */
interface Daemon {
  readonly name: string;
  readonly child: ChildProcess;
  /** Everything it printed so far, stdout and stderr mixed. */
  log(): string;
  /** Settles when it has exited. */
  readonly exited: Promise<void>;
  /** Whether it has exited. */
  hasExited(): boolean;
  /** Resolves when its output contains `pattern`; rejects if it exits first. */
  printed(pattern: RegExp): Promise<void>;
}

/**
 * Starts `file args...` as a daemon in the foreground. Through util-linux's setpriv when there is one, so that
 * the kernel kills it with SIGKILL if this process dies without running its exit handlers (SIGKILL, a crash).
 */
function startDaemon(name: string, file: string, args: readonly string[], env: NodeJS.ProcessEnv): Daemon {
  const setpriv = findProgram("setpriv");
  const command = setpriv === undefined ? [file, ...args] : [setpriv, "--pdeathsig", "KILL", "--", file, ...args];
  const child = spawn(command[0] as string, command.slice(1), { env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  let exitedFlag = false;
  const watchers = new Set<() => void>();
  const take = (chunk: string): void => {
    output += chunk;
    for (const w of watchers) w();
  };
  child.stdout?.setEncoding("utf8").on("data", take);
  child.stderr?.setEncoding("utf8").on("data", take);
  const exited = new Promise<void>((resolve) => {
    const end = (how: string): void => {
      if (exitedFlag) return;
      exitedFlag = true;
      take(`\n[${name} ${how}]\n`);
      resolve();
    };
    // An error with a pid is a failed kill() of a running daemon; without one, it never started.
    child.on("error", (e) => (child.pid === undefined ? end(`could not start: ${e.message}`) : take(`${e}\n`)));
    child.on("close", (code, signal) => end(`exited: code ${code}, signal ${signal}`));
  });
  const printed = (pattern: RegExp): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (pattern.test(output)) {
          watchers.delete(check);
          resolve();
        } else if (exitedFlag) {
          watchers.delete(check);
          reject(new Error(`${name} exited before printing ${pattern}`));
        }
      };
      watchers.add(check);
      check();
    });
  return { name, child, log: () => output, exited, hasExited: () => exitedFlag, printed };
}

/** Ports nobody listens on now (bound on all interfaces, as slurmctld and slurmd bind theirs), closed again. */
async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(0, resolve);
      });
    }
    return servers.map((s) => {
      const address = s.address();
      if (address === null || typeof address === "string") throw new Error("no TCP address");
      return address.port;
    });
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }
}

/** Pids of processes (not this one) whose environment holds `entry` ("NAME=value"), read from /proc. */
function processesWithEnv(entry: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, "utf8").split("\0").includes(entry)) out.push(Number(name));
    } catch {
      /* gone meanwhile, or not ours to read */
    }
  }
  return out;
}

/** Sends SIGKILL to `pid` unless it is gone already. */
function kill(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ESRCH") throw e;
  }
}

/**
 * Whether `promise` settles within `ms` (rejecting if it rejects first). For events that should come but might
 * not if something is broken; the deadline only bounds a failing test.
 */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const timeout = new AbortController();
  try {
    return await Promise.race([promise.then(() => true), delay(ms, false, { signal: timeout.signal, ref: false })]);
  } finally {
    timeout.abort();
  }
}

/** The configuration of a one-node cluster whose files are all in `dir`. */
function slurmConf(dir: string, node: string, user: string, cpus: number, ports: readonly number[]): string {
  const [ctld, d] = ports;
  return `# A private one-node cluster for workpool's tests (test/helpers/slurm.ts).
ClusterName=workpool
SlurmctldHost=${node}(127.0.0.1)
SlurmctldPort=${ctld}
SlurmdPort=${d}
SlurmUser=${user}
SlurmdUser=${user}
AuthType=auth/munge
AuthInfo=socket=${join(dir, "munge.socket")}
CredType=cred/munge
StateSaveLocation=${join(dir, "state")}
SlurmdSpoolDir=${join(dir, "spool")}
SlurmctldPidFile=${join(dir, "slurmctld.pid")}
SlurmdPidFile=${join(dir, "slurmd.pid")}
# No cgroups, no accounting, no CPU binding: runs in a container without systemd.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# Believe the CPU count below rather than the hardware's, so srun -n 4 runs on two cores.
SlurmdParameters=config_overrides
ReturnToService=2
NodeName=${node} NodeAddr=127.0.0.1 CPUs=${cpus} State=UNKNOWN
PartitionName=main Nodes=${node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
`;
}

/**
 * Starts a one-node Slurm cluster (munged, slurmctld, slurmd) as children of this process and resolves once
 * its node is idle. Call `stop()` when done (in `test.after.always`); it is also done, less gracefully, if this
 * process exits first. Rejects with the daemons' output if the cluster does not come up.
 */
export async function startSlurm(options: SlurmOptions = {}): Promise<Slurm> {
  const cpus = options.cpus ?? DEFAULT_SLURM_CPUS;
  if (!Number.isInteger(cpus) || cpus < 1)
    throw new Error(`slurm option \`cpus\` must be a positive integer; got ${cpus}`);
  const missing = slurmAvailable();
  if (missing !== undefined) throw new Error(`cannot start Slurm: ${missing}`);
  const program = (name: (typeof PROGRAMS)[number]): string => findProgram(name) as string;

  const dir = mkdtempSync(join(tmpdir(), "wp-slurm-"));
  const conf = join(dir, "slurm.conf");
  const node = hostname().split(".")[0] as string;
  const env = launcherFreeEnv({ SLURM_CONF: conf });
  const daemons: Daemon[] = [];

  const killNow = (): void => {
    for (const d of daemons) if (!d.hasExited()) d.child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", killNow);

  const stopDaemon = async (d: Daemon): Promise<void> => {
    if (d.hasExited()) return;
    d.child.kill("SIGTERM");
    if (!(await within(d.exited, STOP_DEADLINE_MS))) {
      d.child.kill("SIGKILL");
      await d.exited;
    }
  };
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      const [munged, ...slurm] = daemons;
      await Promise.all(slurm.map(stopDaemon));
      if (munged) await stopDaemon(munged);
      const left = processesWithEnv(`SLURM_CONF=${conf}`);
      for (const pid of left) kill(pid);
      const stuck = await waitUntilGone(left);
      process.removeListener("exit", killNow);
      rmSync(dir, { recursive: true, force: true });
      if (stuck.length > 0) throw new Error(`Slurm processes still alive after SIGKILL: ${stuck.join(", ")}`);
    })());

  try {
    mkdirSync(join(dir, "state"));
    mkdirSync(join(dir, "spool"));
    // MUNGE wants its key private to the user it runs as (us), 1 KiB of random bytes.
    writeFileSync(join(dir, "munge.key"), randomBytes(1024), { mode: 0o400 });
    writeFileSync(conf, slurmConf(dir, node, userInfo().username, cpus, await freePorts(2)));
    // PMIx's plugin makes each step's folder (spmix_appdir_<uid>_<job>.<step>) in /tmp by default, and a step
    // fails to launch where that name is left from an earlier cluster (whose job numbers also began at 1): in
    // the private folder instead, removed with it.
    mkdirSync(join(dir, "pmix"));
    writeFileSync(join(dir, "mpi.conf"), `PMIxCliTmpDirBase=${join(dir, "pmix")}\n`);

    // --force: munged wants every folder above its socket searchable by all; ours is private (0700).
    const munged = startDaemon(
      "munged",
      program("munged"),
      [
        "--foreground",
        "--force",
        `--socket=${join(dir, "munge.socket")}`,
        `--key-file=${join(dir, "munge.key")}`,
        `--pid-file=${join(dir, "munged.pid")}`,
        `--seed-file=${join(dir, "munged.seed")}`,
      ],
      env,
    );
    daemons.push(munged);
    if (!(await within(munged.printed(/Created socket/), READY_DEADLINE_MS))) {
      throw new Error(`munged did not create its socket within ${READY_DEADLINE_MS} ms`);
    }
    daemons.push(startDaemon("slurmctld", program("slurmctld"), ["-D", "-i", "-f", conf], env));
    daemons.push(startDaemon("slurmd", program("slurmd"), ["-D", "-N", node, "-f", conf], env));

    // The node turns idle when slurmd has registered with slurmctld: nothing announces that to us, so ask sinfo.
    const deadline = Date.now() + READY_DEADLINE_MS;
    let state = "";
    for (;;) {
      const dead = daemons.find((d) => d.hasExited());
      if (dead) throw new Error(`${dead.name} exited while the cluster was starting`);
      state = (await runProgram([program("sinfo"), "-h", "-o", "%T"], { env })).stdout.trim();
      if (state === "idle") break;
      if (Date.now() > deadline)
        throw new Error(`node ${node} not idle after ${READY_DEADLINE_MS} ms (sinfo: ${state})`);
      await delay(50);
    }
  } catch (e) {
    const confText = readableConf(conf);
    await stop().catch(() => {});
    const logs = daemons.map((d) => `--- ${d.name}:\n${d.log()}`).join("\n");
    throw new Error(`${(e as Error).message}\n${confText}${logs}`, { cause: e });
  }

  return {
    env,
    node,
    dir,
    srun: (args, o = {}) => runProgram([program("srun"), ...args], { env: { ...env, ...o.env }, cwd: o.cwd }),
    stop,
  };
}

/** The configuration file's text for an error message, or nothing if it is gone. */
function readableConf(conf: string): string {
  try {
    return `--- ${conf}:\n${readFileSync(conf, "utf8")}`;
  } catch {
    return "";
  }
}
