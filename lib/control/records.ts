/**
 * The records of the control channel (channel.ts), in one place: what a rank sends its launcher (`RankRecord`),
 * what the launcher sends a rank (`LauncherRecord`), and the hello that opens a rank's connection. Each is one
 * JSON object a line, told apart by its `t`. Writers build them typed (report.ts's `report`, the channel's
 * `send`); readers get them from another process, and check every field they read before they act on it
 * (`readRankRecord`, `readLauncherRecord`): a rank on another host is not trusted to send well-formed records.
 *
 * Nothing here is loaded at run time but this file (its imports are types): the launcher reads records through
 * lib/internal-start.ts, before it loads zeromq, msgpackr or the pools.
 */
import type { PoolConfig } from "../pool/options.ts";
import type { PoolStats } from "../pool/types.ts";

/** A record as read off a connection: a JSON object, not checked yet. */
export type UncheckedRecord = Readonly<Record<string, unknown>>;

// Rank to launcher.

/** A connection's first line: the rank it speaks for, and the job's secret (WORKPOOL_TOKEN). */
export interface HelloRecord {
  readonly t: "hello";
  readonly rank: number;
  readonly token: string;
}

/**
 * A heartbeat: the first goes with the hello, before the app is evaluated (from the preload), the others every
 * WORKPOOL_HEARTBEAT_MS ms. Any record tells the launcher that the rank is alive; this one says nothing else.
 */
export interface BeatRecord {
  readonly t: "beat";
}

/**
 * An uncaught error, the rank's last words (preload.ts); with its `stack` when the launcher is to print it (as
 * Node would have), without when the app handles uncaught errors itself.
 */
export interface ErrorRecord {
  readonly t: "error";
  readonly message: string;
  readonly stack?: string;
}

/** A pool run's statistics on this rank (lib/pool/pool.ts), when the launcher asked for them (`--stats`). */
export interface StatsReport {
  readonly t: "stats";
  readonly pool: string;
  readonly run: number;
  readonly config: PoolConfig;
  readonly stats: PoolStats;
}

/** A pool's tasks done and queued on this rank, for the progress line: every 200 ms of a run, and at its end. */
export interface ProgressRecord {
  readonly t: "progress";
  readonly pool: string;
  readonly done: number;
  readonly queued: number;
}

/** A run's trace events on this rank (`--trace`; lib/pool/trace.ts): JSON lines, one event each. */
export interface TraceRecord {
  readonly t: "trace";
  readonly lines: string;
}

/**
 * A pool that survives its workers' deaths (`retries`): from the first such record on, the launcher survives the
 * death of any rank that no tolerate record names `essential` (launcher/survival.ts).
 */
export interface TolerateRecord {
  readonly t: "tolerate";
  readonly essential: readonly number[];
}

/** A pool's coordinator re-dealt the `tasks` the dead `rank` held; the launcher says so. */
export interface RedealtRecord {
  readonly t: "redealt";
  readonly pool: string;
  readonly rank: number;
  readonly tasks: number;
}

/** What a rank began: [context, count] pairs (runs of each pool, world collectives; lib/comm/router.ts). */
export type Progress = readonly (readonly [context: number, count: number])[];

/** The rank is closing its world, having begun `p` (deaths.ts: leave notices). */
export interface LeavingRecord {
  readonly t: "leaving";
  readonly p: Progress;
}

/** The rank's `n`-th `World#shrink`, `b` its first free context (deaths.ts: shrink answers). */
export interface ShrinkRecord {
  readonly t: "shrink";
  readonly n: number;
  readonly b: number;
}

/**
 * What a rank waits in, for the launcher's deadlock check (launcher/stalls.ts; lib/comm/stall.ts sends it). `w`:
 * the waits, as `recv (from rank 1, tag 5)`; empty once it no longer waits on messages alone (nothing else is
 * sent then). `q`: the messages it holds that no receive took, as `from rank 0, tag 5`. `o`: the messages it
 * handed to each other rank so far, as flat [rank, count] pairs (those it sent none left out); `i`: the messages
 * that reached it. `l`: the records of the launcher's it has read. `s` numbers its reports.
 */
export interface WaitsRecord {
  readonly t: "waits";
  readonly s: number;
  readonly w: readonly string[];
  readonly q: readonly string[];
  readonly o: readonly number[];
  readonly i: number;
  readonly l: number;
}

/** One pool's figures in a live sample: counts are cumulative over the pool's runs on this rank (live.ts). */
export interface LivePool {
  readonly pool: string;
  readonly run: number;
  readonly active: boolean;
  readonly mode: string;
  readonly strategy: string;
  readonly done: number;
  readonly put: number;
  readonly busyMs: number;
  readonly runMs: number;
  readonly msgs: number;
  readonly bytes: number;
  readonly movedIn: number;
  readonly movedOut: number;
  readonly tokenRounds: number;
  readonly redealt: number;
  readonly queued: number;
  readonly loopDone?: number;
  readonly loopTotal?: number;
}

/** A live sample of the rank (live.ts), sent while someone watches the job (launcher/dashboard/). */
export interface LiveSample {
  readonly t: "live";
  readonly rss: number;
  readonly heap: number;
  readonly heapTotal: number;
  readonly pools: readonly LivePool[];
}

/** What a rank sends its launcher after its hello. */
export type RankRecord =
  | BeatRecord
  | ErrorRecord
  | StatsReport
  | ProgressRecord
  | TraceRecord
  | TolerateRecord
  | RedealtRecord
  | LeavingRecord
  | ShrinkRecord
  | WaitsRecord
  | LiveSample;

// Launcher to rank.

/** Why the launcher closes a connection it does not accept (a wrong token, a rank out of range). */
export interface RefusedRecord {
  readonly t: "refused";
  readonly reason: string;
}

/** A death the job survives (deaths.ts: death notices): every rank gets them all, in the same order. */
export interface DeadRecord {
  readonly t: "dead";
  readonly rank: number;
  readonly why: string;
}

/** Someone watches the job (`workpool top`): from now on, send live samples (live.ts). */
export interface LiveRequest {
  readonly t: "live";
}

/** Rank `rank` closed its world having begun `p`, less of something than every leaver before it. */
export interface LeftRecord {
  readonly t: "left";
  readonly rank: number;
  readonly p: Progress;
}

/** The answer to every live rank's `n`-th shrink: the ranks dead so far, and the largest first free context. */
export interface ShrunkRecord {
  readonly t: "shrunk";
  readonly n: number;
  readonly dead: readonly number[];
  readonly b: number;
}

/** What the launcher sends a rank. */
export type LauncherRecord = RefusedRecord | DeadRecord | LiveRequest | LeftRecord | ShrunkRecord;

const isObject = (v: unknown): v is UncheckedRecord => typeof v === "object" && v !== null;
const isInteger = (v: unknown): v is number => Number.isInteger(v);
const finite = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);
const isProgress = (v: unknown): v is Progress =>
  Array.isArray(v) &&
  v.every((e) => Array.isArray(e) && e.length === 2 && typeof e[0] === "number" && typeof e[1] === "number");

/**
 * A record a rank sent (after its hello), checked: the typed record, or what is wrong with it (`a redealt record
 * without a pool name, a rank and a task count`), for a record of a known kind that lacks what the launcher
 * reads, or of a kind it does not know. `size`: the number of ranks, for the ranks a record names. A live
 * sample is never wrong: what in it is not a number counts 0, and a pool without a name is left out.
 */
export function readRankRecord(record: unknown, size: number): RankRecord | string {
  if (!isObject(record)) return "no JSON object";
  switch (record.t) {
    case "beat":
      return { t: "beat" };
    case "error": {
      const { message, stack } = record;
      if (typeof message !== "string") return "an error record without a message";
      return typeof stack === "string" ? { t: "error", message, stack } : { t: "error", message };
    }
    case "stats": {
      const { pool, run, config, stats } = record;
      // What the statistics table and `workpool compare` read: each rank's counters, by pool and run.
      if (typeof pool !== "string" || !isInteger(run) || !isObject(config) || !isObject(stats)) {
        return "a stats record without a pool name, a run, its configuration and its statistics";
      }
      if (!isObject(stats.counters)) return "a stats record without counters";
      return { t: "stats", pool, run, config: config as PoolConfig, stats: stats as unknown as PoolStats };
    }
    case "progress": {
      const { pool, done, queued } = record;
      if (typeof pool !== "string" || typeof done !== "number" || typeof queued !== "number") {
        return "a progress record without a pool name and its counts";
      }
      return { t: "progress", pool, done, queued };
    }
    case "trace":
      return typeof record.lines === "string"
        ? { t: "trace", lines: record.lines }
        : "a trace record without its lines";
    case "tolerate": {
      const { essential } = record;
      const isRank = (r: unknown) => isInteger(r) && r >= 0 && r < size;
      if (!Array.isArray(essential) || !essential.every(isRank)) {
        return `a tolerate record whose \`essential\` is not a list of ranks in 0..${size - 1}`;
      }
      return { t: "tolerate", essential: essential as number[] };
    }
    case "redealt": {
      const { pool, rank, tasks } = record;
      if (typeof pool !== "string" || !isInteger(rank) || !isInteger(tasks) || tasks < 0) {
        return "a redealt record without a pool name, a rank and a task count";
      }
      return { t: "redealt", pool, rank, tasks };
    }
    case "leaving":
      return isProgress(record.p)
        ? { t: "leaving", p: record.p }
        : "a leaving record whose `p` is not a list of [context, count] pairs";
    case "shrink": {
      const { n, b } = record;
      return isInteger(n) && isInteger(b) ? { t: "shrink", n, b } : "a shrink record without its number and context";
    }
    case "waits":
      return readWaits(record, size);
    case "live":
      return readLiveSample(record);
    default:
      return `a record of a kind the launcher does not know (${JSON.stringify(record.t)})`;
  }
}

/** Strings, none longer than MAX_WAIT_TEXT (a rank's own words, printed by the launcher as they are). */
const isTexts = (v: unknown): v is readonly string[] =>
  Array.isArray(v) && v.every((e) => typeof e === "string" && e.length <= MAX_WAIT_TEXT);
const MAX_WAIT_TEXT = 500;

function readWaits(record: UncheckedRecord, size: number): WaitsRecord | string {
  const { s, w, q = [], o = [], i = 0, l = 0 } = record;
  const counts =
    Array.isArray(o) && o.length % 2 === 0 && o.every((e, k) => isInteger(e) && e >= 0 && (k % 2 === 1 || e < size));
  if (!isInteger(s) || !isTexts(w) || !isTexts(q) || !counts || !isInteger(i) || !isInteger(l)) {
    return "a waits record without its number, waits, counts of messages and of launcher records";
  }
  return { t: "waits", s, w, q, o: o as number[], i, l };
}

/** A live sample as the dashboard can use it: what is not a number counts 0, a pool without a name is left out. */
function readLiveSample(record: UncheckedRecord): LiveSample {
  const pools: LivePool[] = [];
  for (const p of Array.isArray(record.pools) ? (record.pools as unknown[]) : []) {
    if (!isObject(p) || typeof p.pool !== "string") continue;
    const loop =
      typeof p.loopTotal === "number" ? { loopDone: finite(p.loopDone), loopTotal: finite(p.loopTotal) } : {};
    pools.push({
      pool: p.pool,
      run: finite(p.run),
      active: p.active === true,
      mode: typeof p.mode === "string" ? p.mode : "",
      strategy: typeof p.strategy === "string" ? p.strategy : "",
      done: finite(p.done),
      put: finite(p.put),
      busyMs: finite(p.busyMs),
      runMs: finite(p.runMs),
      msgs: finite(p.msgs),
      bytes: finite(p.bytes),
      movedIn: finite(p.movedIn),
      movedOut: finite(p.movedOut),
      tokenRounds: finite(p.tokenRounds),
      redealt: finite(p.redealt),
      queued: finite(p.queued),
      ...loop,
    });
  }
  return { t: "live", rss: finite(record.rss), heap: finite(record.heap), heapTotal: finite(record.heapTotal), pools };
}

/**
 * A record the launcher sent, checked as a rank reads it: the typed record, or undefined for one it cannot act
 * on (a kind it does not know, a field missing).
 */
export function readLauncherRecord(record: unknown): LauncherRecord | undefined {
  if (!isObject(record)) return undefined;
  switch (record.t) {
    case "refused":
      return { t: "refused", reason: String(record.reason) };
    case "dead": {
      const { rank, why } = record;
      return typeof rank === "number" && typeof why === "string" ? { t: "dead", rank, why } : undefined;
    }
    case "live":
      return { t: "live" };
    case "left": {
      const { rank, p } = record;
      return typeof rank === "number" && isProgress(p) ? { t: "left", rank, p } : undefined;
    }
    case "shrunk": {
      const { n, dead, b } = record;
      const isRanks = Array.isArray(dead) && dead.every((r) => typeof r === "number");
      return typeof n === "number" && isRanks ? { t: "shrunk", n, dead: dead as number[], b: Number(b) } : undefined;
    }
    default:
      return undefined;
  }
}
