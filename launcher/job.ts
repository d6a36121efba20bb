import { randomBytes } from "node:crypto";
import { appendFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { constants } from "node:os";
import { join } from "node:path";
import { ENV, formatJobKey, makeJobKey, tcpEndpoint, type TransportKind } from "../lib/internal-start.ts";
import type { RankLauncherFactory, RankProcess } from "./backend.ts";
import { LocalLauncher } from "./backends/local.ts";
import { type ControlRecord, ControlServer } from "./control-server.ts";
import { JobWatch } from "./dashboard/watch.ts";
import { makeJobFolder } from "./job-folder.ts";
import { rankNodeOptions } from "./loader.ts";
import { pipeLines } from "./lines.ts";
import { ProgressLine } from "./progress.ts";
import { type StatsRecord, formatStats } from "./stats-table.ts";
import { BEATS_PER_TIMEOUT, DEFAULT_HEARTBEAT_SECONDS, firstRecordDueMs, startAllowanceMs } from "./heartbeat.ts";
import { Shrinks } from "./shrink.ts";
import { Survival } from "./survival.ts";
import { mergeTrace } from "./trace-merge.ts";

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

/** Ranks are child processes of the launcher, on this host. */
export const DEFAULT_BACKEND: RankLauncherFactory = (jobDir) => new LocalLauncher(jobDir);

/** ssh's status when the connection to the host was lost (or never made). */
const SSH_LOST = 255;

/** Node's exit status for an option it does not take (its "Invalid Argument"). */
const NODE_BAD_OPTION = 9;

/** How many of a rank's first stderr lines, before it reports, are kept to explain a failed start. */
const EARLY_STDERR_LINES = 20;

/** How long ranks get between SIGTERM and SIGKILL when the job is brought down. */
const GRACE_MS = 2000;

interface Rank {
  readonly rank: number;
  readonly process: RankProcess;
  exited: boolean;
  lastError: string | undefined;
  lastStderr: string | undefined;
  /** The first stderr lines written before the launcher heard from the rank: node's own, if it refused to start. */
  readonly earlyStderr: string[];
  /** When the launcher last heard from the rank over its control channel (or started it), epoch ms. */
  lastHeard: number;
  /** Whether it has heard from the rank at all: until then, its start gets firstRecordDueMs (heartbeat.ts). */
  heard: boolean;
  /** Whether it was started through an agent on another host. */
  readonly remote: boolean;
}

interface Failure {
  readonly rank: number;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly message: string | undefined;
}

function signalNumber(signal: NodeJS.Signals): number {
  return (constants.signals as Record<string, number>)[signal] ?? 1;
}

/**
 * Runs one job: N ranks of `app`, started by the back-end, joined through a rendezvous service, their output
 * prefixed, their reports read from their control channels, and brought down together when any rank fails, on a
 * timeout, or when the launcher is interrupted. The exception: once a pool has asked for it, the death of a rank
 * that is not essential to it is survived (survival.ts). Resolves to the launcher's exit status.
 */
export async function runJob(opts: JobOptions): Promise<number> {
  const dir = makeJobFolder();
  const jobId = dir.slice(dir.lastIndexOf("-") + 1);
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

  const ranks: Rank[] = [];
  // The live view (launcher/dashboard/): fed by the hooks marked `watch.` below.
  const watch = new JobWatch({
    np: opts.np,
    app: opts.app,
    hostOf: (rank) => backend.hostOf?.(rank),
    trace: opts.trace,
    dashboard: opts.dashboard,
    keepSeconds: opts.dashboard?.keepSeconds,
  });
  const statsRecords: StatsRecord[] = [];
  const traceDir = opts.trace ? join(dir, "trace") : undefined;
  const progress = !opts.quiet && process.stderr.isTTY ? new ProgressLine(process.stderr) : undefined;
  const stdout = progress ? progress.around(process.stdout) : process.stdout;
  const stderr = progress ? progress.around(process.stderr) : process.stderr;
  let failure: Failure | undefined;
  /** Ranks that failed before any was stopped, in exit order (several often fail on the same bad input). */
  const ownFailures: Failure[] = [];
  let stopping = false;
  let stopReason: string | undefined;
  let exitStatus: number | undefined;
  let killTimer: NodeJS.Timeout | undefined;

  const stopAll = () => {
    stopping = true;
    for (const r of ranks) if (!r.exited) r.process.signal("SIGTERM");
    killTimer ??= setTimeout(() => {
      for (const r of ranks) if (!r.exited) r.process.signal("SIGKILL");
    }, GRACE_MS);
  };

  /** The least each context's count was among the ranks that closed (see "leaving"); a missing one is 0. */
  let least: Map<number, number> | undefined;
  /** Ranks that said they are closing their world. */
  const closing = new Set<number>();
  /** Each uncaught error message whose stack was printed, and the rank whose it was. */
  const printedErrors = new Map<string, number>();
  const survival = new Survival({
    size: opts.np,
    where,
    // Called on a rank's death only, so once the control server (below) is up.
    broadcast: (record) => {
      watch.broadcast(record);
      control.broadcast(record);
      if (record.t === "dead") shrinks.died(record.rank as number);
    },
    write: (text) => stderr.write(text),
  });
  // World#shrink: survivors agree here on who is gone (launcher/shrink.ts).
  const shrinks = new Shrinks({
    size: opts.np,
    live: (rank) => ranks[rank]?.exited === false && !survival.isDead(rank),
    broadcast: (record) => control.broadcast(record),
  });
  const onRecord = (rank: number, msg: ControlRecord) => {
    const r = ranks[rank];
    if (!r) return;
    r.lastHeard = Date.now();
    r.heard = true;
    watch.record(rank, msg);
    if (survival.read(rank, msg) || shrinks.read(rank, msg)) return;
    if (msg.t === "error" && typeof msg.message === "string") {
      r.lastError = msg.message;
      // A rank's uncaught error comes here instead of its stderr (lib/control/preload.ts): one stack per
      // different message, so N ranks failing the same way (the same bad input, one task's TaskError that
      // every rank rethrows) print it once, from the first rank to report it.
      if (typeof msg.stack === "string" && !printedErrors.has(msg.message)) {
        printedErrors.set(msg.message, rank);
        const prefix = opts.prefix ? `[${rank}] ` : "";
        stderr.write(`${prefix}${msg.stack.replaceAll("\n", `\n${prefix}`)}\n`);
      }
    } else if (msg.t === "leaving" && Array.isArray(msg.p)) {
      // A rank closing its world, with what it began (lib/control/deaths.ts): passed on to every rank when it
      // began less of something than every leaver before it, so a correct job (every rank the same) sends one.
      closing.add(rank);
      const progress = new Map(msg.p as [number, number][]);
      let lower = least === undefined;
      if (least) {
        for (const [context, n] of least) {
          const mine = progress.get(context) ?? 0;
          if (mine < n) {
            lower = true;
            least.set(context, mine);
          }
        }
      } else least = progress;
      // Not to ranks that are closing themselves: they need no notice, and may exit before reading it.
      if (lower) control.broadcast({ t: "left", rank, p: msg.p }, closing);
    } else if (msg.t === "stats") statsRecords.push({ ...(msg as unknown as StatsRecord), rank });
    else if (msg.t === "trace" && traceDir && typeof msg.lines === "string") {
      writeTraceLines(traceDir, rank, msg.lines);
    } else if (msg.t === "progress") {
      progress?.update(rank, String(msg.pool), Number(msg.done ?? 0), Number(msg.queued ?? 0));
    }
  };
  /** Trace events that could not be written to the job folder (EMFILE, a full disk): the trace lacks them. */
  let traceLost: { events: number; ranks: Set<number> } | undefined;
  // A failed write loses those events, never the job: the first is a warning, the count comes at the end.
  const writeTraceLines = (dir: string, rank: number, lines: string) => {
    try {
      appendFileSync(join(dir, `rank-${rank}.jsonl`), lines);
    } catch (e) {
      if (!traceLost) {
        traceLost = { events: 0, ranks: new Set() };
        stderr.write(
          `workpool: warning: could not write rank ${rank}'s trace events to the job folder ` +
            `(${(e as Error).message}); the job goes on, the trace ${opts.trace} will lack them\n`,
        );
      }
      traceLost.events += lines.split("\n").filter((l) => l !== "").length;
      traceLost.ranks.add(rank);
    }
  };
  if (traceDir) mkdirSync(traceDir);
  const token = randomBytes(18).toString("base64url");
  const control = await ControlServer.listen({
    address: backend.controlAddress,
    size: opts.np,
    token,
    onRecord,
    onWatch: watch.onWatch,
  });
  try {
    await watch.attach(control, dir, token, traceDir);
  } catch (e) {
    // No rank has started: the job ends here, leaving nothing behind (the dashboard's port is taken, say).
    await control.close();
    rendezvous?.close();
    backend.close();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }

  const jobEnv: Record<string, string> = {
    ...opts.forward,
    [ENV.size]: String(opts.np),
    [ENV.job]: jobId,
    ...(rendezvous ? { [ENV.rendezvous]: rendezvous.endpoint } : {}),
    [ENV.transport]: transport,
    ...(key ? { [ENV.key]: formatJobKey(key) } : alone ? {} : { [ENV.insecure]: "1" }),
    [ENV.ipcDir]: dir,
    [ENV.control]: control.address,
    [ENV.token]: token,
    [ENV.reportStats]: opts.stats || opts.statsJson ? "1" : "0",
    [ENV.reportProgress]: progress ? "1" : "0",
    ...watch.env(),
  };
  if (opts.pool !== undefined) jobEnv[ENV.pool] = opts.pool;
  if (traceDir) jobEnv[ENV.reportTrace] = "1";
  const heartbeatMs = (opts.heartbeatSeconds ?? DEFAULT_HEARTBEAT_SECONDS) * 1000;
  // What node gets to start a rank on this machine before its first record is overdue: it grows with the ranks
  // started here and the machine's load, both known now.
  let localRanks = 0;
  for (let i = 0; i < opts.np; i++) if (backend.hostOf?.(i) === undefined) localRanks++;
  const startMs = startAllowanceMs(localRanks);
  const beatMs = Math.max(1, Math.floor(heartbeatMs / BEATS_PER_TIMEOUT));
  if (heartbeatMs > 0) jobEnv[ENV.heartbeatMs] = String(beatMs);
  const argv = [...(opts.nodeArgs ?? []), ...rankNodeOptions(opts.app), opts.app, ...opts.args];

  const onSignal = (signal: NodeJS.Signals) => {
    if (stopReason !== undefined) {
      for (const r of ranks) if (!r.exited) r.process.signal("SIGKILL");
      return;
    }
    stopReason = `workpool: received ${signal}; stopping ${opts.np} rank${opts.np === 1 ? "" : "s"}`;
    exitStatus = 128 + signalNumber(signal);
    stopAll();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  process.on("SIGHUP", onSignal);

  let timeout: NodeJS.Timeout | undefined;
  if (opts.timeoutSeconds !== undefined) {
    timeout = setTimeout(() => {
      if (stopReason !== undefined || failure) return;
      stopReason = `workpool: job timed out after ${opts.timeoutSeconds} s; stopping ${opts.np} rank${opts.np === 1 ? "" : "s"}`;
      exitStatus = 124;
      stopAll();
    }, opts.timeoutSeconds * 1000);
  }

  // A rank is heard from by its reports and heartbeats, the first sent by its preload before the app runs; one
  // silent for heartbeatMs is stopped or hung, and so is one never heard from once its start is overdue (its
  // process stopped or hung while node started it, or a remote one's agent that hangs). One the job survives is
  // killed, so that it can never come back with late messages, and counted dead at once.
  /** Ranks found silent by the heartbeat. */
  const cutOff = new Set<number>();
  const heartbeat =
    heartbeatMs > 0
      ? setInterval(() => {
          if (stopReason !== undefined || failure) return;
          const now = Date.now();
          const s = heartbeatMs / 1000;
          const dueMs = (r: Rank) => firstRecordDueMs(heartbeatMs, r.remote, startMs);
          // A rank not heard from yet whose process is stopped is not starting: overdue after heartbeatMs, as a
          // rank that stopped answering is, not after the allowance for a slow start.
          const stoppedAtStart = (r: Rank) =>
            !r.heard && now - r.lastHeard > heartbeatMs && (r.process.stopped?.() ?? false);
          const isSilent = (r: Rank) =>
            !r.exited &&
            !survival.isDead(r.rank) &&
            (now - r.lastHeard > (r.heard ? heartbeatMs : dueMs(r)) || stoppedAtStart(r));
          const silentWhy = (r: Rank) =>
            r.heard
              ? `sent no heartbeat for ${s} s`
              : stoppedAtStart(r)
                ? `was stopped before its first record, ${seconds(now - r.lastHeard)} s after it started`
                : `did not start within ${seconds(dueMs(r))} s`;
          let silent = ranks.find(isSilent);
          while (silent && survival.survives(silent.rank)) {
            silent.process.signal("SIGKILL");
            survival.died(silent.rank, silentWhy(silent));
            silent = ranks.find(isSilent);
          }
          if (!silent) return;
          cutOff.add(silent.rank);
          const stopping = `stopping ${opts.np} rank${opts.np === 1 ? "" : "s"}`;
          // Never heard from at all: the rank did not start, which is not the same as a rank that stopped
          // answering. A remote one's host or agent is the likely cause; a local one's process was stopped, or
          // node hung while starting it, before the preload could say a word.
          const notStarted = silent.remote
            ? `never connected to the launcher: is its host reachable, and does the agent give up on one that is ` +
              `not, as ssh -o ConnectTimeout=8 does?`
            : `sent nothing to the launcher since its process started: stopped, or hung while node started it; ` +
              `--heartbeat SECONDS to change, 0 for none`;
          stopReason = silent.heard
            ? `workpool: ${where(silent.rank)} sent no heartbeat for ${s} s (stopped, or blocked in one synchronous ` +
              `stretch that long; --heartbeat SECONDS to change, 0 for none); ${stopping}`
            : stoppedAtStart(silent)
              ? `workpool: ${where(silent.rank)} ${silentWhy(silent)} (its process is stopped: SIGSTOP, or a ` +
                `debugger; --heartbeat SECONDS to change, 0 for none); ${stopping}`
              : `workpool: ${where(silent.rank)} did not start within ${seconds(dueMs(silent))} s (${notStarted}); ${stopping}`;
          exitStatus = 1;
          // A stopped rank acts on no SIGTERM: it would hold the job for the grace, to go only by SIGKILL.
          silent.process.signal("SIGKILL");
          stopAll();
        }, beatMs)
      : undefined;

  const finished: Promise<void>[] = [];
  for (let i = 0; i < opts.np; i++) {
    const proc = backend.start(i, { ...jobEnv, [ENV.rank]: String(i) }, argv);
    const r: Rank = {
      rank: i,
      process: proc,
      exited: false,
      lastError: undefined,
      lastStderr: undefined,
      earlyStderr: [],
      lastHeard: Date.now(),
      heard: false,
      remote: backend.hostOf?.(i) !== undefined,
    };
    ranks.push(r);
    const prefix = opts.prefix ? `[${i}] ` : "";
    const streams = [
      pipeLines(proc.stdout, stdout as never, prefix, (line) => watch.live.output(i, line, false), true),
      pipeLines(
        proc.stderr,
        stderr as never,
        prefix,
        (line) => {
          watch.live.output(i, line, true);
          if (line.trim() === "") return;
          r.lastStderr = line;
          if (!r.heard && r.earlyStderr.length < EARLY_STDERR_LINES) r.earlyStderr.push(line);
        },
        true,
      ),
    ];
    const exited = proc.exit.then(async ({ code, signal, error }) => {
      r.exited = true;
      shrinks.check();
      watch.live.exited(i, code, signal);
      if (error !== undefined) r.lastError = error;
      // Killed by the launcher after missing its heartbeats: counted dead then.
      if (survival.isDead(i)) return;
      const failed = code !== 0 || signal !== null;
      if (!failed) return;
      // A rank that failed before the job was being stopped, or that exited with a status of its own after
      // (not by our SIGTERM or SIGKILL), failed on its own. Only the first kind is a death the job may survive.
      const early = !stopping;
      const own = early || (signal === null && code !== 143);
      // A death is a rank killed (a signal: SIGKILL, the kernel's OOM killer, a crash's SIGSEGV or SIGABRT) or a
      // remote rank whose connection was lost (ssh's 255). A status of the rank's own (an uncaught error, a
      // process.exit) is the app's verdict, and ends the job as always: a worker that rethrows its failed run's
      // error is no death to survive.
      const died = signal !== null || (r.remote && code === SSH_LOST);
      // What ranks wrote before this death is read first: a tolerate record still on its way decides it.
      await control.caughtUp();
      if (early && died && stopReason === undefined && !failure && survival.survives(i)) {
        survival.died(i, how(code, signal));
        return;
      }
      if (stopReason === undefined && own) ownFailures.push({ rank: i, code, signal, message: undefined });
      if (!failure && stopReason === undefined) {
        failure = { rank: i, code, signal, message: undefined };
        stopAll();
      }
    });
    finished.push(Promise.all([exited, ...streams]).then(() => {}));
  }

  await Promise.all(finished);
  // Ranks declared dead, or silent, may be cut off rather than ended: their connections are not waited for.
  for (const r of ranks) if (survival.isDead(r.rank)) cutOff.add(r.rank);
  await control.close(cutOff);
  clearTimeout(timeout);
  clearInterval(heartbeat);
  clearTimeout(killTimer);
  process.off("SIGINT", onSignal);
  process.off("SIGTERM", onSignal);
  process.off("SIGHUP", onSignal);
  rendezvous?.close();
  progress?.stop();
  survival.finish((text) => process.stderr.write(text));
  if (opts.trace && traceDir) {
    try {
      mergeTrace(traceDir, opts.np, opts.trace);
      if (traceLost) {
        const ranksLost = [...traceLost.ranks].sort((a, b) => a - b).join(", ");
        process.stderr.write(
          `workpool: warning: trace ${opts.trace} lacks ${traceLost.events} events of rank${traceLost.ranks.size === 1 ? "" : "s"} ${ranksLost} that could not be written\n`,
        );
      }
    } catch (e) {
      process.stderr.write(`workpool: warning: could not write trace ${opts.trace}: ${(e as Error).message}\n`);
    }
  }
  backend.close();
  rmSync(dir, { recursive: true, force: true });
  if (opts.statsJson) {
    try {
      writeFileSync(opts.statsJson, JSON.stringify(statsRecords));
    } catch (e) {
      process.stderr.write(
        `workpool: warning: could not write statistics ${opts.statsJson}: ${(e as Error).message}\n`,
      );
    }
  }
  if (opts.stats && statsRecords.length > 0) process.stderr.write(`${formatStats(statsRecords)}\n`);

  if (stopReason !== undefined) {
    process.stderr.write(`${stopReason}\n`);
    await watch.finish(exitStatus ?? 1, stopReason);
    return exitStatus ?? 1;
  }
  if (failure) {
    // The stack above may be another rank's, if it failed the same way and reported first: say whose it is.
    const printedBy = printedErrors.get(ranks[failure.rank]?.lastError ?? "");
    const whose = printedBy !== undefined && printedBy !== failure.rank ? printedBy : undefined;
    const line = summarize(failure, ranks, ownFailures, where, (rank) => survival.isDead(rank), opts.nodeArgs ?? []);
    process.stderr.write(
      `${line}${whose === undefined ? "" : ` (the same error as ${where(whose)}'s, printed above)`}\n`,
    );
    const status =
      failure.signal !== null
        ? 128 + signalNumber(failure.signal)
        : failure.code && failure.code > 0 && failure.code < 256
          ? failure.code
          : 1;
    await watch.finish(status, line);
    return status;
  }
  await watch.finish(0);
  return 0;
}

/** A duration in ms as whole seconds, rounded up, for messages. */
function seconds(ms: number): number {
  return Math.ceil(ms / 1000);
}

/** How a rank ended, for messages: `killed by SIGKILL`, `exit code 3`. */
function how(code: number | null, signal: NodeJS.Signals | null): string {
  return signal !== null ? `killed by ${signal}` : `exit code ${code}`;
}

/**
 * Why node refused to start a rank, when it was an option the user gave with --node-arg: the first line node
 * wrote that names it. Node's last line would blame the wrong flag: after a bad option it complains about
 * options it adds itself (`bad option: --harmony-import-attributes`).
 */
function refusedNodeArg(r: Rank, code: number | null, nodeArgs: readonly string[]): string | undefined {
  if (r.heard || code !== NODE_BAD_OPTION || nodeArgs.length === 0) return undefined;
  const name = (arg: string) => arg.split("=")[0] as string;
  for (const named of [(a: string) => a, name]) {
    for (const line of r.earlyStderr) {
      const arg = nodeArgs.find((a) => line.includes(named(a)));
      if (arg !== undefined) return `node refused --node-arg=${arg}: ${line.trim()}`;
    }
  }
  return undefined;
}

/**
 * Signals a process raises on itself when it crashes (an abort, a bad memory access): what it wrote last on
 * stderr may say why (V8's `FATAL ERROR: ... JavaScript heap out of memory`). Any other signal came from
 * outside (SIGKILL from a user or the kernel's OOM killer, our SIGTERM), and what the rank was printing then is
 * not why it died.
 */
const CRASH_SIGNALS: ReadonlySet<string> = new Set([
  "SIGABRT",
  "SIGSEGV",
  "SIGBUS",
  "SIGILL",
  "SIGFPE",
  "SIGTRAP",
  "SIGSYS",
]);

/**
 * What a failed rank said that may explain its failure, cut to one line: its uncaught error; else its last
 * stderr line, when it ended by a status of its own (the app's verdict, which the line before it most likely
 * gives) or crashed. Never an ordinary line a rank was printing when it was killed from outside.
 */
function lastWords(r: Rank, how: Failure): string | undefined {
  const stderr = how.signal === null || CRASH_SIGNALS.has(how.signal) ? r.lastStderr : undefined;
  return oneLine(r.lastError ?? stderr);
}

/** A message's first non-blank line, marked `(...)` when it had more. */
function oneLine(full: string | undefined): string | undefined {
  const first = full?.split("\n").find((l) => l.trim() !== "");
  // (ssh ends its lines with \r\n: compare trimmed, or a one-line message would look cut.)
  return first !== undefined && first.trim() !== full?.trim() ? `${first.trim()} (...)` : first?.trim();
}

/**
 * The one-line summary of a failed job: the first rank that failed, how, and why. When that rank left no
 * message but another said why (ranks often fail together on the same input, and the first to exit may be
 * one that printed nothing), that rank's words are added: an uncaught error of any rank, or the last stderr
 * line of a rank that failed on its own (a status of its own, not our SIGTERM); never a line of a rank that
 * ended well or was stopped (what it printed is its ordinary output, such as a result it verified), nor the
 * words of a rank whose death the job survived (they explain that death, which has its own line).
 */
function summarize(
  failure: Failure,
  ranks: readonly Rank[],
  ownFailures: readonly Failure[],
  where: (rank: number) => string,
  survived: (rank: number) => boolean,
  nodeArgs: readonly string[],
): string {
  const head = `workpool: ${where(failure.rank)} failed (${how(failure.code, failure.signal)})`;
  const refused = refusedNodeArg(ranks[failure.rank] as Rank, failure.code, nodeArgs);
  if (refused) return `${head}: ${refused}`;
  const own = lastWords(ranks[failure.rank] as Rank, failure);
  if (own) return `${head}: ${own}`;
  const others = ownFailures.filter((f) => f.rank !== failure.rank && !survived(f.rank));
  const order = [...others.map((f) => f.rank), ...ranks.map((r) => r.rank)].filter((rank) => !survived(rank));
  const thrower = order.find((rank) => (ranks[rank] as Rank).lastError !== undefined);
  if (thrower !== undefined) return `${head}; ${where(thrower)} said: ${oneLine((ranks[thrower] as Rank).lastError)}`;
  for (const f of others) {
    const said = lastWords(ranks[f.rank] as Rank, f);
    if (said !== undefined) return `${head}; ${where(f.rank)} said: ${said}`;
  }
  return head;
}
