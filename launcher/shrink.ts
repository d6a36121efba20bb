import type { ControlRecord } from "./control-server.ts";

/**
 * The launcher's side of `World#shrink` (lib/runtime/deaths.ts has the records): it collects each rank's N-th
 * shrink request, and once every rank still alive has sent one, writes every rank the same answer: the ranks dead
 * so far, in the order their death notices went out (so each rank has read them all before the answer), and the
 * largest first free context any asker gave. The launcher sees every death and every exit, so survivors agree
 * without a consensus round among themselves, and a death while some wait only removes that rank from the wait.
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
      readonly broadcast: (record: ControlRecord) => void;
    },
  ) {}

  /** A record from `rank`; true if it was a shrink request. */
  read(rank: number, msg: ControlRecord): boolean {
    if (msg.t !== "shrink") return false;
    const n = msg.n;
    const base = msg.b;
    if (typeof n !== "number" || typeof base !== "number") return true;
    let asked = this.asked.get(n);
    if (asked === undefined) this.asked.set(n, (asked = new Map()));
    asked.set(rank, base);
    this.check();
    return true;
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
