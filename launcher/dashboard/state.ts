import type { LauncherRecord, LivePool, LiveSample, RankRecord } from "../../lib/internal-start.ts";

/** The width of one column of the busy timeline (ms): the page and `top` show the last HISTORY_BINS of them. */
export const BIN_MS = 500;
/** Columns of history kept per rank: one minute. */
export const HISTORY_BINS = 120;
/** How many lines of rank output are kept for the output tail. */
export const TAIL_LINES = 200;
/** The longest output line kept for the tail (characters); a longer one is cut. */
const TAIL_LINE_CHARS = 400;
/** Failures kept (the first ones: the first failure is the one that explains the others). */
const MAX_FAILURES = 50;
/** The "now" figures of a rank (busy, waiting) are over this many of the last columns. */
const RECENT_BINS = 4;

/** One column of a rank's timeline: ms busy in handlers, ms in a run waiting for work, tasks done, ms sampled. */
type Bin = [busyMs: number, waitMs: number, tasks: number, sampledMs: number];

type RankState = "starting" | "running" | "exited" | "stopped" | "failed" | "dead";

interface RankLive {
  readonly rank: number;
  readonly host: string;
  state: RankState;
  exit: string | undefined;
  rss: number;
  heap: number;
  heapTotal: number;
  /** Each pool's figures from the rank's last sample. */
  pools: readonly LivePool[];
  /** The last sample's totals over its pools (busy ms, run ms, tasks), and when it came (launcher clock). */
  last: { busyMs: number; runMs: number; done: number; at: number } | undefined;
  /** Timeline columns by bin index (bins older than HISTORY_BINS are dropped). */
  readonly bins: Map<number, Bin>;
}

export interface LiveJobOptions {
  readonly np: number;
  readonly app: string;
  /** The host of each rank, undefined for this machine. */
  readonly hostOf: (rank: number) => string | undefined;
  /** Where `--trace` goes, if given: the page links to the trace so far. */
  readonly trace?: string;
  /** The clock (epoch ms). @default Date.now */
  readonly now?: () => number;
}

/** The job's live state, as the page and `workpool top` read it (see `snapshot`). */
export type Snapshot = ReturnType<LiveJob["snapshot"]>;

/**
 * The launcher's live view of a job, for the dashboard (server.ts) and `workpool top` (top.ts): it reads the
 * records the launcher already gets (record-dispatch.ts: the ranks' live samples, their errors, deaths the job
 * survives, re-deals), the ranks' output lines and exits, and keeps per rank a minute of timeline in BIN_MS
 * columns, per pool the totals, and the job's output tail and failures. Everything is bounded: a job of any
 * length and any output keeps the same few hundred kilobytes.
 */
export class LiveJob {
  private readonly ranks: RankLive[];
  private readonly clock: () => number;
  private readonly startedAt: number;
  private endedAt: number | undefined;
  private status: number | undefined;
  private readonly tail: { seq: number; rank: number; err: boolean; text: string }[] = [];
  private tailSeq = 0;
  /** Failures as they happen; `exit`: a rank's exit, which is no failure if the job survives it (see broadcast). */
  private failures: { at: number; rank: number | undefined; text: string; exit?: boolean }[] = [];
  private readonly deaths: { at: number; rank: number; why: string }[] = [];
  private readonly redealt = new Map<string, number>();
  /** Per pool: total tasks done at the last few snapshots, for the rate. */
  private readonly rates = new Map<
    string,
    { at: number; done: number; rate: number; loopDone: number; loopRate: number }
  >();
  private summary: string | undefined;

  constructor(private readonly opts: LiveJobOptions) {
    this.clock = opts.now ?? Date.now;
    this.startedAt = this.clock();
    this.ranks = Array.from({ length: opts.np }, (_, rank) => ({
      rank,
      host: opts.hostOf(rank) ?? "local",
      state: "starting",
      exit: undefined,
      rss: 0,
      heap: 0,
      heapTotal: 0,
      pools: [],
      last: undefined,
      bins: new Map(),
    }));
  }

  /** Whether the job has ended. */
  get over(): boolean {
    return this.endedAt !== undefined;
  }

  /**
   * A record from a rank's control channel (before record-dispatch.ts acts on it), checked; undefined for one
   * that was not well-formed (the rank was heard from all the same).
   */
  record(rank: number, record: RankRecord | undefined): void {
    const r = this.ranks[rank];
    if (!r) return;
    if (r.state === "starting") r.state = "running";
    if (record?.t === "live") this.sample(r, record);
    else if (record?.t === "error") this.fail(rank, record.message);
    else if (record?.t === "redealt")
      this.redealt.set(record.pool, (this.redealt.get(record.pool) ?? 0) + record.tasks);
  }

  /** A record the launcher sends every rank: a death it survives. */
  broadcast(record: LauncherRecord): void {
    if (record.t !== "dead") return;
    const r = this.ranks[record.rank];
    if (r) r.state = "dead";
    // The rank's exit was taken for a failure when it came (it comes before the launcher decides): it is a death.
    this.failures = this.failures.filter((f) => !(f.exit && f.rank === record.rank));
    this.deaths.push({ at: this.clock(), rank: record.rank, why: record.why });
  }

  /** A line a rank wrote (`err`: on stderr). */
  output(rank: number, text: string, err: boolean): void {
    this.tail.push({ seq: ++this.tailSeq, rank, err, text: text.slice(0, TAIL_LINE_CHARS) });
    if (this.tail.length > TAIL_LINES) this.tail.shift();
  }

  /** A rank's process ended. */
  exited(rank: number, code: number | null, signal: NodeJS.Signals | null): void {
    const r = this.ranks[rank];
    if (!r) return;
    const failed = code !== 0 || signal !== null;
    // SIGTERM (or node's 143 for it): the launcher stopped the rank, with the job.
    const stopped = signal === "SIGTERM" || code === 143;
    r.exit = signal !== null ? `killed by ${signal}` : `exit code ${code}`;
    if (r.state !== "dead") r.state = stopped ? "stopped" : failed ? "failed" : "exited";
    if (failed && r.state === "failed") this.fail(rank, `rank ${rank} ended (${r.exit})`, true);
  }

  /** The job ended with `status`; `summary` is what the launcher printed last (its reason, if it failed). */
  ended(status: number, summary?: string): void {
    this.endedAt = this.clock();
    this.status = status;
    this.summary = summary;
    if (status !== 0 && summary) this.fail(undefined, summary);
  }

  private fail(rank: number | undefined, text: string, exit = false): void {
    if (this.failures.length < MAX_FAILURES)
      this.failures.push({ at: this.clock(), rank, text: text.slice(0, 2000), exit });
  }

  /** A live sample (its numbers checked: lib/control/records.ts). */
  private sample(r: RankLive, sample: LiveSample): void {
    r.rss = sample.rss;
    r.heap = sample.heap;
    r.heapTotal = sample.heapTotal;
    r.pools = sample.pools;
    const at = this.clock();
    let busyMs = 0;
    let runMs = 0;
    let done = 0;
    for (const p of sample.pools) {
      busyMs += p.busyMs;
      runMs += p.runMs;
      done += p.done;
    }
    const prev = r.last;
    r.last = { busyMs, runMs, done, at };
    if (!prev) return;
    const dt = at - prev.at;
    if (dt <= 0) return;
    // The interval since the last sample goes to the column it ended in (samples come every 250 ms).
    const index = Math.floor((at - this.startedAt) / BIN_MS);
    const bin = r.bins.get(index) ?? [0, 0, 0, 0];
    const busy = Math.min(dt, Math.max(0, busyMs - prev.busyMs));
    const inRun = Math.min(dt, Math.max(busy, runMs - prev.runMs));
    bin[0] += busy;
    bin[1] += inRun - busy;
    bin[2] += Math.max(0, done - prev.done);
    bin[3] += dt;
    r.bins.set(index, bin);
    for (const old of r.bins.keys()) if (old <= index - HISTORY_BINS) r.bins.delete(old);
  }

  /**
   * The state to show: the job, each rank (its busy, waiting and outside-pool fractions over the last two
   * seconds), each pool (summed over ranks), the output lines after `tailAfter`, failures and deaths, and the
   * timeline columns from `binsFrom` on (the page asks only for what it lacks; negative: that many of the last).
   */
  snapshot(binsFrom = 0, tailAfter = 0) {
    const now = this.endedAt ?? this.clock();
    const current = Math.floor((now - this.startedAt) / BIN_MS);
    // Negative: that many of the last columns (and of the last output lines).
    const from = binsFrom < 0 ? current + binsFrom + 1 : binsFrom;
    const first = Math.max(from, current - HISTORY_BINS + 1, 0);
    const ranks = this.ranks.map((r) => {
      let busy = 0;
      let wait = 0;
      let sampled = 0;
      for (let i = current - RECENT_BINS + 1; i <= current; i++) {
        const b = r.bins.get(i);
        if (!b) continue;
        busy += b[0];
        wait += b[1];
        sampled += b[3];
      }
      let queued = 0;
      let done = 0;
      let put = 0;
      let movedIn = 0;
      let movedOut = 0;
      let msgs = 0;
      let bytes = 0;
      // A rank no longer running has no "now": its last figures are history, its queue gone.
      const live = r.state === "running" || r.state === "starting";
      if (!live) sampled = 0;
      for (const p of r.pools) {
        queued += live ? p.queued : 0;
        done += p.done;
        put += p.put;
        movedIn += p.movedIn;
        movedOut += p.movedOut;
        msgs += p.msgs;
        bytes += p.bytes;
      }
      const bins: (Bin | null)[] = [];
      for (let i = first; i <= current; i++) bins.push((r.bins.get(i)?.map(Math.round) as Bin | undefined) ?? null);
      return {
        rank: r.rank,
        host: r.host,
        state: r.state,
        exit: r.exit ?? null,
        sampled: sampled > 0,
        busy: sampled > 0 ? busy / sampled : 0,
        waiting: sampled > 0 ? wait / sampled : 0,
        queued,
        done,
        put,
        movedIn,
        movedOut,
        msgs,
        bytes,
        rss: r.rss,
        heap: r.heap,
        heapTotal: r.heapTotal,
        bins,
      };
    });
    return {
      job: {
        app: this.opts.app,
        np: this.opts.np,
        startedAt: this.startedAt,
        now,
        wallMs: now - this.startedAt,
        ended: this.endedAt !== undefined,
        status: this.status ?? null,
        summary: this.summary ?? null,
        trace: this.opts.trace !== undefined,
      },
      binMs: BIN_MS,
      binsFrom: first,
      binsTo: current,
      ranks,
      pools: this.pools(now),
      tail: tailAfter < 0 ? this.tail.slice(tailAfter) : this.tail.filter((l) => l.seq > tailAfter),
      failures: this.failures,
      deaths: this.deaths,
    };
  }

  /** Each pool's figures, summed over the ranks' last samples. */
  private pools(now: number) {
    const byName = new Map<
      string,
      {
        pool: string;
        mode: string;
        strategy: string;
        run: number;
        activeRanks: number;
        done: number;
        put: number;
        queued: number;
        movedIn: number;
        busyRanks: number;
        tokenRounds: number;
        redealt: number;
        loopDone: number;
        loopTotal: number | null;
      }
    >();
    for (const r of this.ranks) {
      for (const p of r.pools) {
        let s = byName.get(p.pool);
        if (!s) {
          s = {
            pool: p.pool,
            mode: p.mode,
            strategy: p.strategy,
            run: 0,
            activeRanks: 0,
            done: 0,
            put: 0,
            queued: 0,
            movedIn: 0,
            busyRanks: 0,
            tokenRounds: 0,
            redealt: 0,
            loopDone: 0,
            loopTotal: null,
          };
          byName.set(p.pool, s);
        }
        s.run = Math.max(s.run, p.run);
        if (p.active && r.state === "running") s.activeRanks++;
        s.done += p.done;
        s.put += p.put;
        s.queued += p.active ? p.queued : 0;
        s.movedIn += p.movedIn;
        s.tokenRounds = Math.max(s.tokenRounds, p.tokenRounds);
        if (p.loopTotal !== undefined) {
          s.loopDone += p.loopDone ?? 0;
          s.loopTotal = Math.max(s.loopTotal ?? 0, p.loopTotal);
        }
      }
    }
    const current = Math.floor((now - this.startedAt) / BIN_MS);
    for (const r of this.ranks) {
      const b = r.bins.get(current) ?? r.bins.get(current - 1);
      if (b && b[0] > 0) for (const s of byName.values()) if (s.activeRanks > 0) s.busyRanks++;
    }
    return [...byName.values()].map((s) => {
      // Tasks per second over the last second or so (the launcher's clock; snapshots come twice a second). The
      // first snapshot of a pool, when a page opens, has no earlier one: its rate is the mean since the job began
      // (it read 0 for a second).
      const seen = this.rates.get(s.pool) ?? { at: this.startedAt, done: 0, rate: 0, loopDone: 0, loopRate: 0 };
      let rate = seen.rate;
      let loopRate = seen.loopRate;
      if (!this.rates.has(s.pool) || now - seen.at >= 1000) {
        if (now > seen.at) {
          rate = ((s.done - seen.done) * 1000) / (now - seen.at);
          // A new loop starts its count again: no rate from the one before.
          loopRate = s.loopDone >= seen.loopDone ? ((s.loopDone - seen.loopDone) * 1000) / (now - seen.at) : 0;
        }
        this.rates.set(s.pool, { at: now, done: s.done, rate, loopDone: s.loopDone, loopRate });
      }
      const phase =
        s.activeRanks === 0
          ? `run ${s.run} ended`
          : s.queued === 0 && s.busyRanks === 0
            ? s.strategy.includes("termination=token-ring")
              ? `detecting termination (token round ${s.tokenRounds + 1})`
              : "detecting termination"
            : "working";
      return {
        ...s,
        rate: Math.max(0, rate),
        loopRate: s.loopTotal === null ? null : Math.max(0, loopRate),
        phase,
        redealt: this.redealt.get(s.pool) ?? 0,
        deaths: this.deaths.length,
      };
    });
  }
}
