import type { LeftRecord, Progress } from "../lib/internal-start.ts";

/**
 * The launcher's side of leave notices (lib/control/deaths.ts has the records): a rank closing its world says
 * what it began (`{"t":"leaving","p":[[context, count], ...]}`), and it is passed on to every rank
 * (`{"t":"left","rank","p"}`) when it began less of something than every leaver before it, so a correct job
 * (every rank the same) sends one. Not to ranks that are closing themselves: they need no notice, and may exit
 * before reading it.
 */
export class Leavers {
  /** The least each context's count was among the ranks that closed; a missing one is 0. */
  private least: Map<number, number> | undefined;
  /** Ranks that said they are closing their world. */
  private readonly closing = new Set<number>();

  constructor(private readonly broadcast: (record: LeftRecord, skip: ReadonlySet<number>) => void) {}

  /** `rank` is closing its world, having begun `p` (checked: lib/control/records.ts). */
  leaving(rank: number, p: Progress): void {
    this.closing.add(rank);
    const progress = new Map(p);
    let lower = this.least === undefined;
    if (this.least) {
      for (const [context, n] of this.least) {
        const mine = progress.get(context) ?? 0;
        if (mine < n) {
          lower = true;
          this.least.set(context, mine);
        }
      }
    } else this.least = progress;
    if (lower) this.broadcast({ t: "left", rank, p }, this.closing);
  }
}
