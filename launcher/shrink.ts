import type { ShrunkRecord } from "../lib/internal-start.ts";

/**
 * The launcher's side of `World#shrink` (lib/control/deaths.ts: shrink answers; records.ts has the records): it
 * collects each rank's N-th shrink request, and once every rank still alive has sent one, writes every rank the
 * same answer: the ranks dead so far, in the order their death notices went out (so each rank has read them all
 * before the answer), and the largest first free context any asker gave. The launcher sees every death and every
 * exit, so survivors agree without a consensus round among themselves, and a death while some wait only removes
 * that rank from the wait.
 */
export class Shrinks {
  /** For each open shrink number: each asker's first free context. */
  private readonly asked = new Map<number, Map<number, number>>();
  private readonly dead: number[] = [];

  constructor(
    private readonly opts: {
      readonly size: number;
      /** True while rank r can still ask (running, not dead). */
      readonly live: (rank: number) => boolean;
      readonly broadcast: (record: ShrunkRecord) => void;
    },
  ) {}

  /** A shrink record from `rank` (checked: lib/control/records.ts): its `n`-th shrink, `base` its first context. */
  ask(rank: number, n: number, base: number): void {
    let asked = this.asked.get(n);
    if (asked === undefined) this.asked.set(n, (asked = new Map()));
    asked.set(rank, base);
    this.check();
  }

  /** Rank `rank`'s death was just told to every rank. */
  died(rank: number): void {
    this.dead.push(rank);
    this.check();
  }

  /** Answers every shrink that no live rank is still to ask for. */
  check(): void {
    for (const [n, asked] of this.asked) {
      let all = true;
      for (let r = 0; r < this.opts.size && all; r++) if (this.opts.live(r) && !asked.has(r)) all = false;
      if (!all) continue;
      this.asked.delete(n);
      this.opts.broadcast({ t: "shrunk", n, dead: [...this.dead], b: Math.max(...asked.values()) });
    }
  }
}
