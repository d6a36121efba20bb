import { readFileSync } from "node:fs";
import { totalmem } from "node:os";
import { addressFacing, ENV, formatJobKey, makeJobKey } from "../lib/internal-start.ts";
import { resolveApp } from "./app-path.ts";
import { PACKAGE_ROOT } from "./loader.ts";
import { MIN_SECONDS, OptionReader } from "./argv.ts";
import { HostsLauncher, DEFAULT_AGENT } from "./backends/hosts.ts";
import {
  forwardVariable,
  type HostSlots,
  isLocalHost,
  parseHostList,
  placeRanks,
  readHostfile,
  splitCommand,
  totalSlots,
} from "./hosts.ts";
import { DEFAULT_HEARTBEAT_SECONDS, MIN_HEARTBEAT_SECONDS } from "./heartbeat.ts";
import { type JobOptions, runJob } from "./job.ts";
import { checkOutputFile } from "./output-path.ts";
import { UsageError } from "./usage-error.ts";

const MAX_RANKS = 1024;
/**
 * Memory a rank takes at least, idle (RSS, MB): 56 MB measured by `npm run bench -- startup` (bare node: 54).
 * A job whose ranks cannot fit in this machine's memory is refused before it starts (`--force` to try anyway).
 */
const RANK_MB = 56;

const MAIN_HELP = `Usage: workpool <command> [options]

Run dynamic, irregular parallel programs on many Node.js processes joined by ZeroMQ.

Commands:
  launch [options] <app> [args...]   start N ranks of an app (see workpool launch --help)
  compare [options] <app> [args...]  run an app under several pool strategies and compare them
  top [JOB-FOLDER]                   watch a running job in the terminal (see workpool top --help)
  keygen                             print a new job key, for WORKPOOL_KEY when ranks are started
                                     by mpirun or srun (docs/hosts.md)

Options:
  -h, --help      show this help
  -v, --version   show the version
`;

/**
 * The pools' registries and options, loaded when a command needs them (help, --pool): `workpool launch` without
 * --pool starts its ranks without loading the pools.
 */
const pools = () => import("../lib/internal.ts");

/** The distributed strategies, one line each, from the registries (a new strategy shows up here by itself). */
async function strategyHelp(): Promise<string> {
  const { INITIATION_STRATEGIES, PARTNER_POLICIES, TERMINATION_DETECTORS, TOPOLOGIES, TOPOLOGY_READERS } =
    await pools();
  const lines: string[] = [];
  const groups = [
    ["initiation", INITIATION_STRATEGIES],
    ["partner", PARTNER_POLICIES],
    ["termination", TERMINATION_DETECTORS],
  ] as const;
  for (const [key, registry] of groups) {
    for (const [name, strategy] of Object.entries(registry)) {
      lines.push(`  ${`${key}=${name}`.padEnd(24)}${strategy.summary}`);
    }
  }
  const readers = TOPOLOGY_READERS.map((r) => (r.option === "partner" ? `partner=${r.name}` : r.name));
  lines.push(`  topology=${TOPOLOGIES.join("|")}  the graph of ${readers.join(" and ")}`);
  return lines.join("\n");
}

const launchHelp = async () => `Usage: workpool launch [options] <app> [app args...]

Starts N ranks of <app> (a .js/.mjs/.ts/.mts file, or a folder with main.ts, index.ts, main.js,
index.js or a package.json "main"). Everything after <app> is passed to every rank unchanged.

Options:
  -n, --np N            number of ranks, 1..${MAX_RANKS} (default 1)
      --pool SPEC       default pool of every rank (default distributed: every rank works and steals),
                        e.g. centralized or distributed,initiation=sender,partner=ring,termination=tree
      --timeout SECONDS end the job, with a non-zero status, after this long (at least ${MIN_SECONDS})
      --force           start the ranks even if they seem not to fit in this machine's memory
      --heartbeat SECONDS  end the job, naming the rank, when a rank sends no heartbeat for this long
                        (stopped, or blocked in one synchronous stretch), at least ${MIN_HEARTBEAT_SECONDS};
                        0: none (default ${DEFAULT_HEARTBEAT_SECONDS});
                        a worker of a pool with retries is killed instead, and the job goes on
      --transport KIND  ipc (default, one machine) or tcp (always tcp across hosts)
      --hostfile FILE   run on the hosts of FILE: lines "HOST slots=N", # comments (as OpenMPI);
                        ranks fill the hosts in order; -n defaults to the total of the slots
  -H, --host LIST       hosts as HOST:SLOTS,... e.g. -H a:8,b:8 (a host without :SLOTS has one)
      --oversubscribe   allow more ranks than slots (the extra ones dealt round-robin)
      --agent CMD       how a rank starts on another host, called as CMD HOST PROGRAM ARGS...
                        (default "${DEFAULT_AGENT}", replaced whole by CMD); localhost and
                        this machine start locally
  -x VAR[=VALUE]        give every rank VAR (the launcher's value, or VALUE), on every host (repeatable)
      --insecure        no CURVE on the job's connections: large messages go faster (no encryption),
                        but any process that can reach an endpoint may join, send or read; only on hosts
                        and a network you trust (docs/hosts.md)
      --node-arg ARG    pass ARG to node for every rank, before the app (repeatable), e.g.
                        --node-arg=--cpu-prof or --node-arg=--max-old-space-size=16384
      --no-prefix       do not prefix output lines with [rank]
      --stats           print every rank's pool statistics as a table after the run
      --trace FILE      write a Chrome Trace Event Format file (open in Perfetto or chrome://tracing)
      --quiet           no live progress line (it is shown only when stderr is a terminal)
      --dashboard[=PORT] serve a live page of the job (ranks busy and waiting, queues, tasks moved,
                        memory; pools' progress, rate, termination; output, failures, the trace so far)
                        on 127.0.0.1 (PORT, default any free one); the printed URL carries the job's
                        secret, without which the page answers 403 (docs/dashboard.md)
      --dashboard-host ADDR  listen on ADDR instead of 127.0.0.1 (the secret still guards the page)
      --dashboard-keep SECONDS  after the job ends, keep showing its final state this long; the default
                        is until Ctrl-C when stdin is a terminal, else 0; workpool top shows any
                        running job in the terminal, with or without --dashboard
  -h, --help            show this help

Distributed pool strategies (--pool distributed,KEY=NAME,...; docs/distributed.md):
${await strategyHelp()}

Exit status: 0 when every rank exits 0; otherwise the failing rank's status (128+signal if killed),
124 on timeout, 2 on a bad command line.
`;

const compareHelp = async () => `Usage: workpool compare [options] <app> [app args...]

Runs <app> under each pool configuration, K times each, at each rank count, in K rounds that each run
the baseline and every configuration once (round robin), and prints a table: median wall time in pool
runs (min, max), tasks, tasks moved, pool messages, idle fraction, busy fraction (busy / (ranks x wall)),
termination latency, and with --baseline speedup and efficiency, each a median with (min..max) over the
runs when they differ; the fastest at each rank count is marked. Checks that every run's rank-0 JSON result line agrees (pass the app's
--json flag); a disagreement is printed first, marks no configuration fastest, and makes the status 1.
The check leaves out, at any depth, timing keys (last word seconds, ms, millis or time: seconds,
seqSeconds, solveMs, wall_time), the names elapsed, wall, variant, pool, mode, ranks, np, and --ignore.

Options:
  -n, --np N[,N...]   rank counts, e.g. -n 4 or -n 2,4,8 (a sweep: every configuration at each count;
                      the report plots efficiency against ranks) (default 2)
      --pool SPEC     a configuration to run; repeat for several (default: centralized, centralized with
                      coordinatorWorks=true, centralized with keep=0 (every put sent to the coordinator, as
                      in the seed slides), and all ${(await pools()).DISTRIBUTED_COMBINATIONS.length} distributed combinations)
      --repeat K      runs per configuration (default 3)
      --baseline CMD  a sequential reference: shell command line run K times; its time is the median of its
                      wall times (start-up included) or, if it prints a JSON line with a numeric "seconds"
                      key, of those; adds speedup (baseline / wall, run by run within a round) and
                      efficiency (speedup / ranks)
      --ignore KEY    leave result key KEY out of the agreement check (repeatable)
      --report FILE   write a self-contained HTML report: agreement, table, efficiency against ranks, bar
                      chart, per-rank timelines on one time scale
      --trace-dir DIR keep each configuration's first-run trace (Chrome Trace Event Format) in DIR
      --timeout S     per-run timeout (also for each baseline run)
      --hostfile FILE, -H LIST, --agent CMD, --oversubscribe, -x VAR[=VALUE]
                      run every configuration on these hosts, as workpool launch does
  -h, --help          show this help
`;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("package.json", PACKAGE_ROOT), "utf8")) as { version: string };
  return pkg.version;
}

/** Refuses a job whose ranks need more memory than this machine has, idle (see RANK_MB), unless forced. */
export function checkMemory(np: number, force: boolean, totalBytes = totalmem()): void {
  const needMb = np * RANK_MB;
  const haveMb = Math.floor(totalBytes / 2 ** 20);
  if (force || needMb <= haveMb * 0.9) return;
  const gb = (mb: number) => (mb / 1024).toFixed(1);
  throw new UsageError(
    `-n ${np} needs about ${gb(needMb)} GiB (${np} ranks x ~${RANK_MB} MB each, idle) but this machine has ` +
      `${gb(haveMb)} GiB; use fewer ranks, or --force to start them anyway`,
  );
}

/**
 * The back-end for ranks placed on hosts, or undefined when every one of them is on this machine (the local
 * back-end then runs them as any job). The launcher listens on its address that faces the first remote host
 * (WORKPOOL_HOST in its environment chooses another).
 */
async function hostsBackend(app: string, placement: readonly string[], agent: string): Promise<JobOptions["backend"]> {
  const remote = placement.find((h) => !isLocalHost(h));
  if (remote === undefined) return undefined;
  const agentWords = splitCommand(agent, "--agent");
  let listenHost = process.env[ENV.host];
  if (!listenHost) {
    try {
      listenHost = await addressFacing(remote);
    } catch (e) {
      throw new UsageError(`host ${remote}: ${(e as Error).message}`);
    }
  }
  const host = listenHost;
  return (dir) => new HostsLauncher(dir, { app, placement, agent: agentWords, listenHost: host });
}

/** Validates a `--pool SPEC` completely (keys and values) for a job of `np` ranks. */
export async function checkPoolSpec(spec: string, np: number): Promise<void> {
  if (spec.trim() === "") throw new UsageError("option --pool: the spec is empty (e.g. centralized, or distributed)");
  const { resolvePoolConfig } = await pools();
  try {
    resolvePoolConfig(undefined, spec, np);
  } catch (e) {
    throw new UsageError(`option --pool: ${(e as Error).message}`);
  }
}

/** What `launch`'s options set (readLaunchFlags). */
interface LaunchFlags {
  np?: number;
  hosts?: HostSlots[];
  oversubscribe: boolean;
  insecure: boolean;
  agent: string;
  forward: Record<string, string>;
  prefix: boolean;
  timeoutSeconds?: number;
  heartbeatSeconds?: number;
  force: boolean;
  pool?: string;
  transport: "ipc" | "tcp";
  stats: boolean;
  statsJson?: string;
  trace?: string;
  quiet: boolean;
  dashboard?: { port: number; host?: string; keepSeconds?: number };
  dashboardHost?: string;
  dashboardKeep?: number;
  nodeArgs: string[];
}

/** Reads `launch`'s options, up to the app (whose own arguments follow it); undefined after `--help`. */
async function readLaunchFlags(opts: OptionReader): Promise<LaunchFlags | undefined> {
  const f: LaunchFlags = {
    oversubscribe: false,
    insecure: false,
    agent: DEFAULT_AGENT,
    forward: {},
    prefix: true,
    force: false,
    transport: "ipc",
    stats: false,
    quiet: false,
    nodeArgs: [],
  };
  for (let flag = opts.next(); flag !== undefined; flag = opts.next()) {
    switch (flag) {
      case "-h":
      case "--help":
        process.stdout.write(await launchHelp());
        return undefined;
      case "-n":
      case "--np":
        f.np = opts.int(flag, 1, MAX_RANKS);
        break;
      case "--no-prefix":
        f.prefix = false;
        break;
      case "--stats":
        f.stats = true;
        break;
      case "--stats-json":
        f.statsJson = opts.value(flag);
        break;
      case "--trace":
        f.trace = opts.value(flag);
        break;
      case "--quiet":
        f.quiet = true;
        break;
      case "--dashboard": {
        const port = opts.inlineValue();
        f.dashboard = { port: port === undefined ? 0 : opts.int(flag, 1, 65535) };
        break;
      }
      case "--dashboard-host":
        f.dashboardHost = opts.value(flag);
        if (!/^[0-9A-Za-z.:-]+$/.test(f.dashboardHost)) {
          throw new UsageError(`option --dashboard-host must be an address; got ${JSON.stringify(f.dashboardHost)}`);
        }
        break;
      case "--dashboard-keep":
        f.dashboardKeep = opts.secondsOrNone(flag, "not at all", 1);
        break;
      case "--timeout":
        f.timeoutSeconds = opts.seconds(flag);
        break;
      case "--force":
        f.force = true;
        break;
      case "--heartbeat":
        f.heartbeatSeconds = opts.secondsOrNone(flag, "no heartbeats", MIN_HEARTBEAT_SECONDS);
        break;
      case "--pool":
        f.pool = opts.value(flag);
        break;
      case "--node-arg": {
        const arg = opts.value(flag);
        if (!/^-[^\s]/.test(arg)) {
          throw new UsageError(
            `option --node-arg takes one node option, such as --cpu-prof; got ${JSON.stringify(arg)}`,
          );
        }
        f.nodeArgs.push(arg);
        break;
      }
      case "--hostfile":
        if (f.hosts) throw new UsageError("give the hosts once: --hostfile or --host, not both");
        f.hosts = readHostfile(opts.value(flag));
        break;
      case "-H":
      case "--host":
        if (f.hosts) throw new UsageError("give the hosts once: --hostfile or --host, not both");
        f.hosts = parseHostList(opts.value(flag));
        break;
      case "--oversubscribe":
        f.oversubscribe = true;
        break;
      case "--insecure":
        f.insecure = true;
        break;
      case "--agent":
        f.agent = opts.value(flag);
        break;
      case "-x": {
        const [name, value] = forwardVariable(opts.value(flag), process.env);
        f.forward[name] = value;
        break;
      }
      case "--transport": {
        const t = opts.value(flag);
        if (t !== "ipc" && t !== "tcp")
          throw new UsageError(`option --transport must be ipc or tcp; got ${JSON.stringify(t)}`);
        f.transport = t;
        break;
      }
      default:
        opts.unknown(flag, "launch");
    }
  }
  return f;
}

async function launch(argv: string[]): Promise<number> {
  const opts = new OptionReader(argv);
  const f = await readLaunchFlags(opts);
  if (f === undefined) return 0;
  const { np, hosts, oversubscribe, insecure, agent, forward, prefix, timeoutSeconds, heartbeatSeconds, force } = f;
  const { pool, transport, stats, statsJson, trace, quiet, dashboard, dashboardHost, dashboardKeep, nodeArgs } = f;
  const ranks = np ?? (hosts ? totalSlots(hosts) : 1);
  if (ranks > MAX_RANKS) throw new UsageError(`the hosts' ${ranks} slots are more than ${MAX_RANKS} ranks; give -n`);
  if (pool !== undefined) await checkPoolSpec(pool, ranks);
  const placement = hosts ? placeRanks(hosts, ranks, oversubscribe) : undefined;
  checkMemory(placement ? placement.filter(isLocalHost).length : ranks, force);
  if (dashboard === undefined && (dashboardHost !== undefined || dashboardKeep !== undefined)) {
    throw new UsageError(
      `option ${dashboardHost !== undefined ? "--dashboard-host" : "--dashboard-keep"} needs --dashboard`,
    );
  }
  if (dashboard) {
    dashboard.host = dashboardHost;
    dashboard.keepSeconds = dashboardKeep ?? (process.stdin.isTTY ? Infinity : 0);
  }
  const { app, args } = opts.app("launch");
  const appFile = resolveApp(app);
  if (trace !== undefined) checkOutputFile("--trace", trace);
  if (statsJson !== undefined) checkOutputFile("--stats-json", statsJson);
  return runJob({
    np: ranks,
    app: appFile,
    args,
    forward,
    insecure,
    backend: placement ? await hostsBackend(appFile, placement, agent) : undefined,
    prefix,
    timeoutSeconds,
    heartbeatSeconds,
    pool,
    transport,
    stats,
    statsJson,
    trace,
    quiet,
    nodeArgs,
    dashboard,
  });
}

/**
 * A reader that goes away (`workpool launch ... | head`) makes writes to that stream fail with EPIPE: an 'error'
 * event that, unhandled, crashed the launcher with a stack trace and left its ranks to the reaper. The job goes on
 * and ends as it would; what is written to the failed stream is dropped, said once on standard error (when that
 * is the one still open). Any other failure of standard output (a full disk under a redirect: ENOSPC) loses the
 * job's output, so the launcher's status is then 1 if it would have been 0 (`outputLost`).
 */
let outputWatched = false;
let outputLost = false;
function watchOutput(): void {
  if (outputWatched) return;
  outputWatched = true;
  for (const [stream, name] of [
    [process.stdout, "standard output"],
    [process.stderr, "standard error"],
  ] as const) {
    let told = false;
    stream.on("error", (e: NodeJS.ErrnoException) => {
      if (stream === process.stdout && e.code !== "EPIPE") outputLost = true;
      if (told) return;
      told = true;
      if (stream === process.stdout && !process.stderr.destroyed) {
        const what = e.code === "EPIPE" ? "was closed (EPIPE)" : `failed (${e.code ?? e.message})`;
        process.stderr.write(`workpool: ${name} ${what}: the job goes on, and what it writes there is dropped\n`);
      }
    });
  }
}

export async function main(argv: string[]): Promise<number> {
  const status = await command(argv);
  return status === 0 && outputLost ? 1 : status;
}

async function command(argv: string[]): Promise<number> {
  watchOutput();
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case undefined:
      case "-h":
      case "--help":
      case "help":
        process.stdout.write(MAIN_HELP);
        return command === undefined ? 2 : 0;
      case "-v":
      case "--version":
        process.stdout.write(`${version()}\n`);
        return 0;
      case "launch":
        return await launch(rest);
      case "top": {
        // Loaded only for this command, as compare is.
        const { top } = await import("./dashboard/top.ts");
        return await top(rest);
      }
      case "keygen":
        if (rest.length > 0) throw new UsageError("keygen takes no arguments");
        process.stdout.write(`${formatJobKey(makeJobKey())}\n`);
        return 0;
      case "compare": {
        // Loaded only for this command: `workpool launch` starts faster without it.
        const [{ parseCompareArgs }, { runCompare }] = await Promise.all([
          import("./compare/options.ts"),
          import("./compare/compare.ts"),
        ]);
        const opts = parseCompareArgs(rest, MAX_RANKS);
        if (opts === "help") {
          process.stdout.write(await compareHelp());
          return 0;
        }
        return await runCompare(opts);
      }
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)} (see workpool --help)`);
    }
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`workpool: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}
