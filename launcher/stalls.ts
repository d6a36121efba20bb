import type { WaitsRecord } from "../lib/internal-start.ts";
import { MAX_RANKS_NAMED, nameRanks } from "./rank.ts";

export interface StallsOptions {
  /** The number of ranks. */
  readonly np: number;
  /** Whether `rank` runs: started, not exited, not dead. */
  readonly running: (rank: number) => boolean;
  /** Whether any rank died (a death the job survives): messages to or from it may never be counted. */
  readonly anyDied: () => boolean;
  /** How many records the launcher has sent `rank` (ControlServer#toldTo). */
  readonly toldTo: (rank: number) => number;
  /** How a message names a rank (with its host when it is remote). */
  readonly where: (rank: number) => string;
  /** Brings the job down with `reason` (its last line), once. */
  readonly deadlock: (reason: string) => void;
}

/**
 * Deadlock diagnosis, the launcher's side (lib/comm/stall.ts has the rank's, and why the check holds): the job
 * is deadlocked when every rank's last `waits` report says it waits on messages alone, every rank read every
 * record the launcher sent it, and no message is on its way: for each rank, the messages the others handed it
 * equal those that reached it. The job is then brought down with every rank's waits, and the messages each
 * holds that no receive took (a mismatched tag shows there). Not once a rank died: what it sent may never
 * arrive, or be counted.
 */
export class Stalls {
  /** Each rank's last report while it says it waits; undefined once it says it does not. */
  private readonly latest: (WaitsRecord | undefined)[];
  /** The number of each rank's last report: one that comes later with a lower number is older. */
  private readonly numbers: number[];
  private declared = false;

  constructor(private readonly opts: StallsOptions) {
    this.latest = new Array<WaitsRecord | undefined>(opts.np).fill(undefined);
    this.numbers = new Array<number>(opts.np).fill(0);
  }

  /** Rank `rank`'s report (checked: lib/control/records.ts). */
  waits(rank: number, record: WaitsRecord): void {
    if (record.s <= (this.numbers[rank] ?? 0)) return;
    this.numbers[rank] = record.s;
    this.latest[rank] = record.w.length > 0 ? record : undefined;
    if (record.w.length > 0) this.check();
  }

  private check(): void {
    const { np, running, anyDied, toldTo } = this.opts;
    if (this.declared || anyDied()) return;
    const into = new Array<number>(np).fill(0);
    for (let r = 0; r < np; r++) {
      const report = this.latest[r];
      if (!report || !running(r) || report.l < toldTo(r)) return;
      const o = report.o;
      for (let k = 0; k + 1 < o.length; k += 2) into[o[k] as number]! += o[k + 1] as number;
    }
    for (let r = 0; r < np; r++) if (into[r] !== (this.latest[r] as WaitsRecord).i) return;
    this.declared = true;
    this.opts.deadlock(this.describe());
  }

  /**
   * For a job stopped otherwise (`--timeout`): each rank whose last report says it waits on messages alone, as
   * `  rank 0 waits in recv (from rank 1, tag 9)`; a rank that polls, or waits inside an async task, is not one.
   */
  waiting(): string[] {
    const lines: string[] = [];
    for (let r = 0; r < this.opts.np && lines.length < MAX_RANKS_NAMED; r++) {
      const report = this.latest[r];
      if (report && this.opts.running(r)) lines.push(this.line(r, report));
    }
    return lines;
  }

  /**
   * For the same message: the ranks still running whose last report does not say they wait on messages alone,
   * which are the ones to look at first (a loop that never yields, a wait on a timer, a file or a socket), as
   * `ranks still busy (...): rank 1, rank 3`; or undefined when every rank still running
   * waits on messages. A rank tells its waits at its idle checks, a second apart (router.ts `watchIdle`), so in a
   * job stopped within its first seconds a rank may not have told yet.
   */
  others(): string | undefined {
    const ranks: number[] = [];
    for (let r = 0; r < this.opts.np; r++) if (this.opts.running(r) && this.latest[r] === undefined) ranks.push(r);
    if (ranks.length === 0) return undefined;
    const why =
      "running their own code, or waiting on a timer, a file or a socket rather than on messages; ranks tell every second";
    return `ranks still busy (${why}): ${nameRanks(ranks, this.opts.where)}`;
  }

  private line(rank: number, { w, q }: WaitsRecord): string {
    const held = q.length === 0 ? "" : `; it holds messages no receive took: ${q.join("; ")}`;
    return `  ${this.opts.where(rank)} waits in ${w.join("; ")}${held}`;
  }

  private describe(): string {
    const { np } = this.opts;
    const lines: string[] = [];
    for (let r = 0; r < np && lines.length < MAX_RANKS_NAMED; r++)
      lines.push(this.line(r, this.latest[r] as WaitsRecord));
    if (np > MAX_RANKS_NAMED) lines.push(`  (and ${np - MAX_RANKS_NAMED} more ranks)`);
    return (
      "workpool: deadlock: every rank waits for a message, and none is on its way, so none will come " +
      "(a send and a receive that do not match, or a collective some rank did not call):\n" +
      lines.join("\n")
    );
  }
}
