/**
 * Live samples for the launcher's dashboard and `workpool top` (launcher/dashboard/): while someone watches the
 * job, every rank sends `{"t":"live",...}` over its control channel every LIVE_MS ms, from an unref'd timer. A
 * sample is what the rank's pools already count (PoolStats, kept up to date by the executor and the engines),
 * read as it stands: nothing is measured per task for it, so the hot path pays nothing; the cost is one timer
 * tick, one `process.memoryUsage()` and one short JSON line per rank every LIVE_MS.
 *
 * Sampling starts when the launcher asks: WORKPOOL_REPORT_LIVE=1 in the environment (`--dashboard`), or a
 * `{"t":"live"}` record on the control channel (a `workpool top` attached to a running job). Runs register here
 * from lib/pool/run-setup.ts. The state lives in a global, as report.ts's channel does: the preload that starts the
 * sampler and the app's pools may load this module twice.
 */
import { ENV } from "../comm/env.ts";
import type { PoolConfig } from "../pool/options.ts";
import type { PoolStats } from "../pool/types.ts";
import type { LivePool, LiveSample } from "./records.ts";

/** How often a watched rank sends a sample (ms): twice as often as the dashboard redraws. */
export const LIVE_MS = 250;

/** What the sampler reads of one pool run while it is under way. */
export interface LiveRun {
  readonly pool: string;
  readonly run: number;
  readonly config: PoolConfig;
  readonly stats: PoolStats;
  /** performance.now() when the run began. */
  readonly t0: number;
  /** Tasks queued on this rank now. */
  readonly queued: () => number;
  /** A loop's iterations (or a map's items): done on this rank, and the loop's total (the same on every rank). */
  loop?: { readonly total: number; readonly done: () => number };
}

/** One pool's figures in a sample (records.ts), as they are added up here. */
type PoolTotals = { -readonly [K in keyof LivePool]: LivePool[K] };

interface LiveBoard {
  readonly runs: Set<LiveRun>;
  /** Per pool, the totals of its finished runs on this rank. */
  readonly past: Map<string, PoolTotals>;
  timer: NodeJS.Timeout | undefined;
  /** Where samples go, once sampling has started. */
  send: ((sample: LiveSample) => void) | undefined;
}

const KEY = Symbol.for("workpool.live");
const board: LiveBoard = ((globalThis as Record<symbol, unknown>)[KEY] ??= {
  runs: new Set(),
  past: new Map(),
  timer: undefined,
  send: undefined,
}) as LiveBoard;

/** The strategy of a configuration, in a few words (the dashboard's pool line). */
function strategyOf(c: PoolConfig): string {
  if (c.mode === "distributed") {
    const partner = c.initiation === "receiver" || c.initiation === "sender" ? `, partner=${c.partner}` : "";
    return `initiation=${c.initiation}${partner}, termination=${c.termination}`;
  }
  const parts = [`coordinator=${c.coordinator}`];
  if (c.coordinatorWorks) parts.push("coordinatorWorks");
  if (c.retries > 0) parts.push(`retries=${c.retries}`);
  parts.push(`keep=${c.keep}`);
  return parts.join(", ");
}

const c = (s: PoolStats, name: string) => s.counters[name] ?? 0;

/** A run's figures so far (or final), as totals of that run alone. */
function figures(r: LiveRun, now: number): PoolTotals {
  const s = r.stats;
  return {
    pool: r.pool,
    run: r.run,
    active: true,
    mode: r.config.mode,
    strategy: strategyOf(r.config),
    done: s.tasksExecuted,
    put: s.tasksPut,
    busyMs: s.busyMs,
    runMs: now - r.t0,
    msgs: s.messagesSent,
    bytes: s.bytesSent,
    movedIn: c(s, "tasksMovedIn") + c(s, "pinnedReceived") + c(s, "tasksReceived"),
    movedOut:
      c(s, "tasksMovedOut") + c(s, "pinnedSent") + c(s, "tasksGranted") + c(s, "tasksReleased") + c(s, "tasksShed"),
    tokenRounds: c(s, "tokenRounds"),
    redealt: c(s, "tasksRedealt"),
    queued: r.queued(),
  };
}

const ADDED = [
  "done",
  "put",
  "busyMs",
  "runMs",
  "msgs",
  "bytes",
  "movedIn",
  "movedOut",
  "tokenRounds",
  "redealt",
] as const;

function plus(past: PoolTotals | undefined, now: PoolTotals): PoolTotals {
  if (!past) return now;
  const sum = { ...now };
  for (const k of ADDED) sum[k] += past[k];
  return sum;
}

/**
 * Registers a run with the sampler; the returned function ends it (its final figures join the pool's totals and,
 * while sampling, go out at once).
 */
export function liveRun(r: LiveRun): () => void {
  board.runs.add(r);
  return () => {
    if (!board.runs.delete(r)) return;
    const last = figures(r, performance.now());
    last.active = false;
    last.queued = 0;
    // A loop's progress stays shown, complete, once its run is over.
    if (r.loop) {
      last.loopDone = r.loop.done();
      last.loopTotal = r.loop.total;
    }
    board.past.set(r.pool, plus(board.past.get(r.pool), last));
    // The run's end goes out at once: the rank may exit before the next tick, and the view would keep it running.
    board.send?.(liveSample());
  };
}

/** One sample of this rank: memory, and every pool it has run (active runs with their figures so far). */
export function liveSample(): LiveSample {
  const now = performance.now();
  const pools = new Map<string, PoolTotals>(board.past);
  for (const r of board.runs) {
    const f = plus(board.past.get(r.pool), figures(r, now));
    if (r.loop) {
      f.loopDone = r.loop.done();
      f.loopTotal = r.loop.total;
    }
    pools.set(r.pool, f);
  }
  const mem = process.memoryUsage();
  return { t: "live", rss: mem.rss, heap: mem.heapUsed, heapTotal: mem.heapTotal, pools: [...pools.values()] };
}

/**
 * Starts sending samples through `send` (the control channel's) every LIVE_MS ms, once; later calls do nothing.
 * The channel is passed in, not imported: control.ts calls this, and imports nothing that imports it.
 */
export function startLive(send: (sample: LiveSample) => void): void {
  if (board.timer) return;
  board.send = send;
  send(liveSample());
  board.timer = setInterval(() => send(liveSample()), LIVE_MS);
  board.timer.unref();
}

/** Whether the launcher asked for samples from the start (`--dashboard`). */
export function liveFromStart(env: NodeJS.ProcessEnv = process.env): boolean {
  return env[ENV.reportLive] === "1";
}
