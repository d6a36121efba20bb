/**
 * Timers for the simulations that choose when each timer fires (test/helpers/simulation.ts, resilient-sim.ts,
 * surviving-sim.ts): the engines get their timers and deferred callbacks through the `Timers` seam
 * (lib/pool/timers.ts), and here each one waits, with the rank that set it, until the scheduler fires it. Time
 * never passes: a timer of 1 ms and one of 1 s are equally likely to fire next, which is what makes the
 * schedules adversarial. (The timed simulation fires them at virtual times instead: bench/sim/clock.ts.)
 *
 * Invariant: a cancelled timer never fires; deferred callbacks (`soon`) run in the order they were deferred.
 */
import type { Timers } from "../lib/internal.ts";

export interface Held {
  /** The rank whose engine set it. */
  readonly rank: number;
  readonly fn: () => void;
}

export class HeldTimers {
  /** Timers set and neither fired nor cancelled, by id (ids grow in the order set). */
  readonly timers = new Map<number, Held>();
  /** Deferred callbacks, oldest first. */
  readonly soons: Held[] = [];
  private seq = 0;

  /** Rank `rank`'s timers; `soon`, when given, replaces the held deferred callbacks (e.g. setImmediate). */
  for(rank: number, soon?: (fn: () => void) => void): Timers {
    return {
      after: (_ms, fn) => {
        const id = this.seq++;
        this.timers.set(id, { rank, fn });
        return () => this.timers.delete(id);
      },
      soon: soon ?? ((fn) => this.soons.push({ rank, fn })),
      // Time never passes here (the file comment).
      now: () => 0,
    };
  }

  /** Takes the timer `id` (it must be pending) out, for the caller to fire. */
  take(id: number): Held {
    const t = this.timers.get(id) as Held;
    this.timers.delete(id);
    return t;
  }

  /** Takes the oldest deferred callback (there must be one) out, for the caller to run. */
  takeSoon(): Held {
    return this.soons.shift() as Held;
  }

  /** Forgets what the ranks `dead` says died had set: their timers never fire. */
  forget(dead: (rank: number) => boolean): void {
    for (const [id, t] of this.timers) if (dead(t.rank)) this.timers.delete(id);
    for (let i = this.soons.length - 1; i >= 0; i--) if (dead((this.soons[i] as Held).rank)) this.soons.splice(i, 1);
  }
}
