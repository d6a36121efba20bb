import { type RankRecord, readRankRecord, type UncheckedRecord } from "../lib/internal-start.ts";
import type { JobWatch } from "./dashboard/watch.ts";
import type { Leavers } from "./leavers.ts";
import type { ProgressLine } from "./progress.ts";
import type { Rank } from "./rank.ts";
import type { Shrinks } from "./shrink.ts";
import type { Stalls } from "./stalls.ts";
import type { StatsRecord } from "./stats-table.ts";
import type { Survival } from "./survival.ts";
import type { TraceParts } from "./trace-merge.ts";

export interface RecordDispatchOptions {
  /** The number of ranks: a record that names a rank names one of 0..np-1. */
  readonly np: number;
  /** The job's ranks, as they are started. */
  readonly ranks: readonly Rank[];
  /** Each line of a stack behind `[rank] ` (`--prefix`). */
  readonly prefix: boolean;
  /** Where lines go while the job runs (stderr, around the progress line). */
  readonly write: (text: string) => void;
  readonly watch: JobWatch;
  readonly survival: Survival;
  readonly shrinks: Shrinks;
  readonly leavers: Leavers;
  /** The deadlock check, which reads the ranks' `waits`. */
  readonly stalls: Stalls;
  /** Where trace events go (`--trace`). */
  readonly trace: TraceParts | undefined;
  /** The progress line, when it is shown. */
  readonly progress: ProgressLine | undefined;
}

/**
 * What ignoring a record of these kinds that is not well-formed costs, for the warning that says so. A record
 * of another kind that is not well-formed, or of a kind the launcher does not know, is dropped without a word:
 * a rank may send thousands of progress records, and a warning for each would flood stderr.
 */
const WARNED = new Map([
  ["tolerate", " (any rank's death still ends the job)"],
  ["redealt", ""],
]);

/**
 * What the launcher does with each record a rank sends over its control channel (lib/control/records.ts has
 * them): every record says the rank is alive (the watchdog reads when it was last heard from); the dashboard
 * sees each one first; then each kind goes where it is used. A record is checked before anything reads it: it
 * comes from another process, maybe on another host, that is not trusted to send well-formed records.
 */
export class RecordDispatch {
  /** The pool statistics the ranks reported, in the order they came (`--stats`, `--stats-json`). */
  readonly stats: StatsRecord[] = [];
  /** Each uncaught error message whose stack was printed, and the rank whose it was. */
  private readonly printedErrors = new Map<string, number>();

  constructor(private readonly opts: RecordDispatchOptions) {}

  /** For ControlServer's `onRecord`: a record from `rank`, as read off its connection. */
  readonly onRecord = (rank: number, unchecked: UncheckedRecord): void => {
    const r = this.opts.ranks[rank];
    if (!r) return;
    r.lastHeard = Date.now();
    r.heard = true;
    const record = readRankRecord(unchecked, this.opts.np);
    if (typeof record === "string") {
      this.opts.watch.record(rank, undefined);
      this.ignore(rank, unchecked, record);
      return;
    }
    this.opts.watch.record(rank, record);
    this.take(r, record);
  };

  /** The rank whose stack was printed for an uncaught error `message`, if any was. */
  printedBy(message: string | undefined): number | undefined {
    return message === undefined ? undefined : this.printedErrors.get(message);
  }

  private take(r: Rank, record: RankRecord): void {
    const { survival, progress, trace } = this.opts;
    switch (record.t) {
      // Heard from, which is all a beat says; a live sample is the dashboard's alone.
      case "beat":
      case "live":
        return;
      case "error":
        return this.error(r, record.message, record.stack);
      case "stats":
        this.stats.push({ ...record, rank: r.rank });
        return;
      case "progress":
        return progress?.update(r.rank, record.pool, record.done, record.queued);
      case "trace":
        return trace?.append(r.rank, record.lines);
      case "tolerate":
        return survival.tolerate(record.essential);
      case "redealt":
        return survival.redealt(record);
      case "leaving":
        return this.opts.leavers.leaving(r.rank, record.p);
      case "shrink":
        return this.opts.shrinks.ask(r.rank, record.n, record.b);
      case "waits":
        return this.opts.stalls.waits(r.rank, record);
      default: {
        // Every kind has its case: one added to RankRecord and not here fails to compile.
        const unhandled: never = record;
        return unhandled;
      }
    }
  }

  /**
   * A rank's uncaught error, which comes here instead of its stderr (lib/control/preload.ts): one stack per
   * different message, so N ranks failing the same way (the same bad input, one task's TaskError that every
   * rank rethrows) print it once, from the first rank to report it.
   */
  private error(r: Rank, message: string, stack: string | undefined): void {
    r.lastError = message;
    if (stack === undefined || this.printedErrors.has(message)) return;
    this.printedErrors.set(message, r.rank);
    const prefix = this.opts.prefix ? `[${r.rank}] ` : "";
    this.opts.write(`${prefix}${stack.replaceAll("\n", `\n${prefix}`)}\n`);
  }

  /** A record that is not well-formed (`why`): ignored, with a warning for the kinds in WARNED. */
  private ignore(rank: number, record: UncheckedRecord, why: string): void {
    const cost = typeof record.t === "string" ? WARNED.get(record.t) : undefined;
    if (cost !== undefined)
      this.opts.write(`workpool: rank ${rank} sent ${why}: ${JSON.stringify(record)}; ignored${cost}\n`);
  }
}
