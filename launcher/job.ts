import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { ENV, formatJobKey, makeJobKey, tcpEndpoint, type TransportKind } from "../lib/internal-start.ts";
import type { RankLauncher, RankLauncherFactory } from "./backend.ts";
import { LocalLauncher } from "./backends/local.ts";
import { ControlServer } from "./control-server.ts";
import { JobWatch } from "./dashboard/watch.ts";
import { jobEnd, reportStats } from "./exit-summary.ts";
import { beatIntervalMs, DEFAULT_HEARTBEAT_SECONDS, startAllowanceMs } from "./heartbeat.ts";
import { makeJobFolder } from "./job-folder.ts";
import { Leavers } from "./leavers.ts";
import { rankHeapOptions } from "./heap.ts";
import { rankNodeOptions } from "./loader.ts";
import { ProgressLine } from "./progress.ts";
import { type Rank, type RankOutput, startRank } from "./rank.ts";
import { RecordDispatch } from "./record-dispatch.ts";
import { Shrinks } from "./shrink.ts";
import { Stalls } from "./stalls.ts";
import { StopPolicy } from "./stop-policy.ts";
import { Survival } from "./survival.ts";
import { TraceParts } from "./trace-merge.ts";
import { UsageError } from "./usage-error.ts";
import { releaseWarm } from "./warm.ts";
import { Watchdog } from "./watchdog.ts";

export interface JobOptions {
  readonly np: number;
  readonly app: string;
  readonly args: readonly string[];
  /**
   * No CURVE: any process that can reach an endpoint may join, send or read (`--insecure`). Faster for large
   * messages, for a network and hosts the user trusts. @default false
   */
  readonly insecure?: boolean;
  /** Variables every rank gets, on every host (`-x`). */
  readonly forward?: Readonly<Record<string, string>>;
  readonly prefix: boolean;
  readonly timeoutSeconds: number | undefined;
  /**
   * A rank that sends no heartbeat for this long (stopped, or blocked in one synchronous stretch) brings the
   * job down, named (or, once the job survives that rank's death, is killed and counted dead); 0: no
   * heartbeats. @default DEFAULT_HEARTBEAT_SECONDS
   */
  readonly heartbeatSeconds?: number;
  readonly pool: string | undefined;
  readonly transport: TransportKind;
  /** Print the gathered per-rank pool statistics as a table after the run. */
  readonly stats?: boolean;
  /** Write the per-rank pool statistics, as JSON, to this file (used by `workpool compare`). */
  readonly statsJson?: string;
  /** Write a Chrome Trace Event Format file of every pool run. */
  readonly trace?: string;
  /** No live progress line even when stderr is a terminal. */
  readonly quiet?: boolean;
  /** Options for node itself, given to every rank before the app (`--node-arg`). */
  readonly nodeArgs?: readonly string[];
  /**
   * How ranks start (launcher/backends/).
   * @default DEFAULT_BACKEND: child processes on this host
   */
  readonly backend?: RankLauncherFactory;
  /**
   * Serve the live dashboard (`--dashboard[=PORT]`, `--dashboard-host`), and keep it up this long after the
   * job ends (`keepSeconds`, Infinity: until interrupted). `workpool top` can attach to any job without it.
   */
  readonly dashboard?: { readonly port: number; readonly host?: string; readonly keepSeconds?: number };
}

/** The longest path of a Unix socket, in bytes (sun_path holds 108 on Linux, with its terminating zero). */
const MAX_SOCKET_PATH = 108;

/** Ranks are child processes of the launcher, on this host. */
export const DEFAULT_BACKEND: RankLauncherFactory = (jobDir) => new LocalLauncher(jobDir);

/** Rendezvous: where ranks meet (lib/comm/rendezvous.ts); a job of one rank has none. */
type Rendezvous = Awaited<ReturnType<(typeof import("../lib/internal.ts"))["serveRendezvous"]>>;

/** What a job has before its control channel is up: its folder, its back-end, and where its ranks meet. */
interface Setup {
  readonly dir: string;
  readonly backend: RankLauncher;
  readonly transport: TransportKind;
  /** Every connection of the job is authenticated with it; none with --insecure, or for one rank. */
  readonly key: ReturnType<typeof makeJobKey> | undefined;
  readonly rendezvous: Rendezvous | undefined;
  /** How a message names a rank (with its host when it is remote). */
  readonly where: (rank: number) => string;
}

/** What watches a job's ranks while it runs, and the control server that brings it their records. */
interface Supervision {
  readonly watch: JobWatch;
  readonly progress: ProgressLine | undefined;
  readonly output: RankOutput;
  readonly survival: Survival;
  readonly shrinks: Shrinks;
  readonly trace: TraceParts | undefined;
  readonly dispatch: RecordDispatch;
  readonly stalls: Stalls;
  readonly control: ControlServer;
  /** The job's secret: a connection to the control server must show it (WORKPOOL_TOKEN). */
  readonly token: string;
}

/**
 * Runs one job: N ranks of `app`, started by the back-end, joined through a rendezvous service, their output
 * prefixed, their records read from their control channels (record-dispatch.ts), silent ones found
 * (watchdog.ts), and brought down together when any rank fails, on a timeout, or when the launcher is
 * interrupted (stop-policy.ts). The exception: once a pool has asked for it, the death of a rank that is not
 * essential to it is survived (survival.ts). Resolves to the launcher's exit status (exit-summary.ts).
 */
export async function runJob(opts: JobOptions): Promise<number> {
  const setup = await setUp(opts);
  const ranks: Rank[] = [];
  // A deadlock found (stalls.ts) stops the job as the timeout does; it comes once ranks run, so after `policy` is made.
  const parts = await supervise(opts, setup, ranks, (reason, status) => policy.stop(reason, status));
  const { watch, survival, shrinks, control, output } = parts;
  const heartbeatMs = (opts.heartbeatSeconds ?? DEFAULT_HEARTBEAT_SECONDS) * 1000;
  const policy = new StopPolicy({
    np: opts.np,
    ranks,
    survival,
    caughtUp: () => control.caughtUp(),
    timeoutSeconds: opts.timeoutSeconds,
    waiting: () => parts.stalls.waiting(),
    others: () => parts.stalls.others(),
    where: setup.where,
  });
  const startMs = localStartMs(opts.np, setup.backend);
  const watchdog = new Watchdog({ ranks, survival, policy, where: setup.where, heartbeatMs, startMs });
  const env = jobEnvironment(opts, setup, parts, heartbeatMs);
  const nodeArgs = opts.nodeArgs ?? [];
  const heap = rankHeapOptions(nodeArgs, opts.np, totalmem(), process.env.NODE_OPTIONS);
  const argv = [...nodeArgs, ...heap, ...rankNodeOptions(opts.app), opts.app, ...opts.args];
  policy.start();
  watchdog.start();
  const finished: Promise<void>[] = [];
  for (let i = 0; i < opts.np; i++) {
    const started = startRank(setup.backend, i, { ...env, [ENV.rank]: String(i) }, argv, output, (r, exit) => {
      shrinks.check();
      watch.live.exited(r.rank, exit.code, exit.signal);
      if (exit.error !== undefined) r.lastError = exit.error;
      return policy.exited(r, exit.code, exit.signal);
    });
    ranks.push(started.rank);
    finished.push(started.finished);
  }
  releaseWarm();
  await Promise.all(finished);
  // Ranks declared dead, or silent, may be cut off rather than ended: their connections are not waited for.
  const dead = ranks.filter((r) => survival.isDead(r.rank)).map((r) => r.rank);
  await control.close(new Set([...watchdog.silent, ...dead]));
  policy.dispose();
  watchdog.stop();
  return endJob(opts, setup, parts, ranks, policy);
}

/**
 * Makes what watches the ranks, and starts the control server that brings it their records (the live view, the
 * survival of deaths, shrinks, leavers, the trace, the progress line).
 */
async function supervise(
  opts: JobOptions,
  setup: Setup,
  ranks: readonly Rank[],
  stop: (reason: string, status: number) => void,
): Promise<Supervision> {
  const { dir, backend, rendezvous, where } = setup;
  const watch = new JobWatch({
    np: opts.np,
    app: opts.app,
    hostOf: (rank) => backend.hostOf?.(rank),
    trace: opts.trace,
    dashboard: opts.dashboard,
    keepSeconds: opts.dashboard?.keepSeconds,
  });
  const progress = !opts.quiet && process.stderr.isTTY ? new ProgressLine(process.stderr) : undefined;
  const output: RankOutput = {
    stdout: progress ? progress.around(process.stdout) : process.stdout,
    stderr: progress ? progress.around(process.stderr) : process.stderr,
    prefix: opts.prefix,
    onLine: (rank, line, err) => watch.live.output(rank, line, err),
  };
  const write = (text: string) => void output.stderr.write(text);
  const survival = new Survival({
    where,
    // Called on a rank's death only, so once the control server (below) is up.
    broadcast: (record) => {
      watch.broadcast(record);
      control.broadcast(record);
      shrinks.died(record.rank);
    },
    write,
  });
  /** Whether `rank` runs: started, not exited, and not counted dead. */
  const running = (rank: number) => ranks[rank]?.exited === false && !survival.isDead(rank);
  // World#shrink: survivors agree here on who is gone (launcher/shrink.ts).
  const shrinks = new Shrinks({
    size: opts.np,
    live: running,
    broadcast: (record) => control.broadcast(record),
  });
  const trace = opts.trace ? new TraceParts(join(dir, "trace"), opts.trace, write) : undefined;
  const leavers = new Leavers((record, skip) => control.broadcast(record, skip));
  const stalls = new Stalls({
    np: opts.np,
    running,
    anyDied: () => survival.anyDead,
    toldTo: (rank) => control.toldTo(rank),
    where,
    deadlock: (reason) => stop(reason, 1),
  });
  const { np, prefix } = opts;
  const dispatch = new RecordDispatch({
    np,
    ranks,
    prefix,
    write,
    watch,
    survival,
    shrinks,
    leavers,
    stalls,
    trace,
    progress,
  });
  const token = randomBytes(18).toString("base64url");
  const control = await ControlServer.listen({
    address: backend.controlAddress,
    size: opts.np,
    token,
    onRecord: dispatch.onRecord,
    onWatch: watch.onWatch,
  });
  try {
    await watch.attach(control, dir, token, trace?.dir);
  } catch (e) {
    // No rank has started: the job ends here, leaving nothing behind (the dashboard's port is taken, say).
    await control.close();
    rendezvous?.close();
    backend.close();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return { watch, progress, output, survival, shrinks, trace, dispatch, stalls, control, token };
}

/**
 * Once every rank has exited and the control server is closed: releases the rest, prints the lines of the end
 * (survived deaths, trace and statistics, the summary) and resolves to the launcher's exit status.
 */
async function endJob(
  opts: JobOptions,
  { dir, backend, rendezvous, where }: Setup,
  { progress, survival, trace, dispatch, watch }: Supervision,
  ranks: readonly Rank[],
  policy: StopPolicy,
): Promise<number> {
  rendezvous?.close();
  progress?.stop();
  survival.finish((text) => process.stderr.write(text));
  trace?.finish(opts.np);
  backend.close();
  rmSync(dir, { recursive: true, force: true });
  reportStats(dispatch.stats, opts.statsJson, !!opts.stats);
  const end = jobEnd({
    outcome: policy.outcome,
    ranks,
    where,
    survived: (rank) => survival.isDead(rank),
    printedBy: (message) => dispatch.printedBy(message),
    nodeArgs: opts.nodeArgs ?? [],
  });
  if (end.line !== undefined) process.stderr.write(`${end.line}\n`);
  await watch.finish(end.status, end.summary);
  return end.status;
}

/**
 * Refuses, in one line, a job folder whose sockets (the control channel's, ipc's rendezvous and ranks') would have
 * paths too long for a Unix socket: a long TMPDIR. Removes the folder first.
 */
function checkSocketPaths(dir: string): void {
  const longest = `${dir}/rendezvous`;
  if (Buffer.byteLength(longest) < MAX_SOCKET_PATH) return;
  rmSync(dir, { recursive: true, force: true });
  throw new UsageError(
    `TMPDIR=${JSON.stringify(tmpdir())} is too long a path for the job's sockets: they would be named like ` +
      `${longest} (${Buffer.byteLength(longest)} bytes; a Unix socket's path has at most ${MAX_SOCKET_PATH - 1}); ` +
      "set TMPDIR to a shorter folder",
  );
}

/** Makes the job's folder and back-end, and (for more than one rank) its key and rendezvous. */
async function setUp(opts: JobOptions): Promise<Setup> {
  const dir = makeJobFolder();
  checkSocketPaths(dir);
  // A job of one rank has no connections to make: no rendezvous, no key, and the launcher loads no zeromq (the
  // rank's connect() returns its world of one at once, as without a launcher).
  const alone = opts.np === 1;
  // Every connection of the job is authenticated with this key (lib/comm/job-key.ts); it reaches the ranks in
  // their environment (remote ones: on their standard input), never on a command line. None with --insecure.
  const key = opts.insecure || alone ? undefined : makeJobKey();
  const backend = (opts.backend ?? DEFAULT_BACKEND)(dir);
  // Ranks on other hosts meet over TCP at the launcher's address that faces them.
  const transport = backend.rendezvousHost !== undefined ? "tcp" : opts.transport;
  const rendezvousAddress =
    backend.rendezvousHost !== undefined
      ? tcpEndpoint(backend.rendezvousHost, "*")
      : transport === "ipc"
        ? `ipc://${dir}/rendezvous`
        : "tcp://127.0.0.1:*";
  const rendezvous = alone
    ? undefined
    : await (await import("../lib/internal.ts")).serveRendezvous(opts.np, rendezvousAddress, key);
  // Once every rank has its table, nobody has anything to say to the rendezvous: stop listening, so that its
  // port is open to strangers only while the job starts.
  rendezvous?.complete.then(
    () => rendezvous.close(true),
    () => {},
  );
  const where = (rank: number) => {
    const host = backend.hostOf?.(rank);
    return host === undefined ? `rank ${rank}` : `rank ${rank} (host ${host})`;
  };
  return { dir, backend, transport, key, rendezvous, where };
}

/**
 * What node gets to start a rank on this machine before its first record is overdue: it grows with the ranks
 * started here and the machine's load, both known now (heartbeat.ts).
 */
function localStartMs(np: number, backend: RankLauncher): number {
  let localRanks = 0;
  for (let i = 0; i < np; i++) if (backend.hostOf?.(i) === undefined) localRanks++;
  return startAllowanceMs(localRanks);
}

/** The job's variables, which every rank gets (its own rank aside). */
function jobEnvironment(
  opts: JobOptions,
  { dir, transport, key, rendezvous }: Setup,
  { control, token, progress, watch }: Supervision,
  heartbeatMs: number,
): Record<string, string> {
  const env: Record<string, string> = {
    ...opts.forward,
    [ENV.size]: String(opts.np),
    [ENV.job]: dir.slice(dir.lastIndexOf("-") + 1),
    ...(rendezvous ? { [ENV.rendezvous]: rendezvous.endpoint } : {}),
    [ENV.transport]: transport,
    ...(key ? { [ENV.key]: formatJobKey(key) } : opts.np === 1 ? {} : { [ENV.insecure]: "1" }),
    [ENV.ipcDir]: dir,
    [ENV.control]: control.address,
    [ENV.token]: token,
    [ENV.reportStats]: opts.stats || opts.statsJson ? "1" : "0",
    [ENV.reportProgress]: progress ? "1" : "0",
    ...watch.env(),
  };
  if (opts.pool !== undefined) env[ENV.pool] = opts.pool;
  if (opts.trace) env[ENV.reportTrace] = "1";
  if (heartbeatMs > 0) env[ENV.heartbeatMs] = String(beatIntervalMs(heartbeatMs));
  return env;
}
