import type { DeadRecord, RedealtRecord } from "../lib/internal-start.ts";

export interface SurvivalOptions {
  /** How a message names a rank (with its host when it is remote). */
  readonly where: (rank: number) => string;
  /** Sends a record to every rank, in the same order to each (ControlServer.broadcast). */
  readonly broadcast: (record: DeadRecord) => void;
  /** Where its lines go while the job runs (stderr, around the progress line). */
  readonly write: (text: string) => void;
}

/**
 * Which rank deaths a job survives (issue 17), and what the launcher says of them. Until a rank sends
 * `{"t":"tolerate","essential":[R,...]}` (a pool created with `retries`), none: any rank's death brings the job
 * down. From the first such record to the end of the job, the death of a rank that no tolerate record received
 * so far names as essential is survived: every live rank is told (`{"t":"dead","rank","why"}`, one broadcast per
 * death, so every rank sees the deaths in the same order) and its pool's coordinator re-deals the dead rank's
 * tasks. Each survived death gets one line on stderr: when a pool reports the re-deal (`{"t":"redealt","pool",
 * "rank","tasks"}`), or, if none does, when the job ends.
 */
export class Survival {
  private tolerating = false;
  private readonly essential = new Set<number>();
  /** Why each survived rank died, in the order of the deaths. */
  private readonly deaths = new Map<number, string>();
  /**
   * What pools re-dealt of each rank (`pool1 re-dealt 37 tasks`). Kept for a rank not known dead yet too: a pool
   * may learn of a death on another host before the launcher does.
   */
  private readonly redeals = new Map<number, string[]>();
  /** Survived deaths whose line is printed. */
  private readonly told = new Set<number>();
  /** Survived deaths whose line is due at the end of this turn of the event loop. */
  private readonly due = new Set<number>();

  constructor(private readonly opts: SurvivalOptions) {}

  /** Whether the job goes on without `rank` if it dies now. */
  survives(rank: number): boolean {
    return this.tolerating && !this.essential.has(rank);
  }

  /** Whether `rank` died and the job went on without it. */
  isDead(rank: number): boolean {
    return this.deaths.has(rank);
  }

  /** Whether any rank died and the job went on without it. */
  get anyDead(): boolean {
    return this.deaths.size > 0;
  }

  /** A tolerate record's `essential` ranks (checked: lib/control/records.ts), from any rank. */
  tolerate(essential: readonly number[]): void {
    this.tolerating = true;
    for (const r of essential) this.essential.add(r);
  }

  /** A redealt record (checked), from any rank: a pool re-dealt the tasks `rank` held. */
  redealt({ pool, rank, tasks }: RedealtRecord): void {
    const said = this.redeals.get(rank) ?? [];
    said.push(`${pool} re-dealt ${tasks} task${tasks === 1 ? "" : "s"}`);
    this.redeals.set(rank, said);
    if (this.deaths.has(rank)) this.tellSoon(rank);
  }

  /** `rank` died, `why` (`killed by SIGKILL`, `exit code 3`, `sent no heartbeat for 2 s`): tells every live rank. */
  died(rank: number, why: string): void {
    this.deaths.set(rank, why);
    this.opts.broadcast({ t: "dead", rank, why });
    if (this.redeals.has(rank)) this.tellSoon(rank);
  }

  /** At the end of the job: one line, through `write`, for each survived death not told yet. */
  finish(write: (text: string) => void): void {
    for (const rank of this.deaths.keys()) this.tell(rank, "went", write);
  }

  /**
   * Prints `rank`'s line at the end of this turn of the event loop, once: re-deals that several pools report
   * together join it. One reported later than that is left out (one line per death).
   */
  private tellSoon(rank: number): void {
    if (this.told.has(rank) || this.due.has(rank)) return;
    this.due.add(rank);
    setImmediate(() => this.tell(rank, "goes", this.opts.write));
  }

  private tell(rank: number, tense: "goes" | "went", write: (text: string) => void): void {
    if (this.told.has(rank)) return;
    this.told.add(rank);
    const redealt = this.redeals.get(rank);
    const head = `workpool: ${this.opts.where(rank)} died (${this.deaths.get(rank)}); the job ${tense} on without it`;
    write(`${redealt ? `${head}: ${redealt.join(", ")}` : head}\n`);
  }
}
