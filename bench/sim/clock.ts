/**
 * The virtual clock of the timed simulation (timed.ts): events at virtual times (ms), run in time order, and
 * in the order they were scheduled among equal times, so that a run replays exactly. `soon` callbacks (the
 * engine's deferred flushes, a parked rank resuming) run at the current time before any later event, as
 * setImmediate and promise continuations run before the next timer or message of a real rank.
 */
export interface ClockEvent {
  readonly t: number;
  readonly seq: number;
  /** Cleared when cancelled. */
  fn: (() => void) | undefined;
}

export class VirtualClock {
  /** The current virtual time, ms. */
  now = 0;
  /** Events run so far (cancelled ones not counted). */
  events = 0;
  /** Most events pending at once (cancelled timers included). */
  peak = 0;
  private seq = 0;
  private readonly heap: ClockEvent[] = [];
  private readonly immediate: (() => void)[] = [];
  private immediateHead = 0;

  /** Runs `fn` at virtual time `t` (not before now); returns the event, whose `fn` may be cleared to cancel it. */
  at(t: number, fn: () => void): ClockEvent {
    const ev: ClockEvent = { t: t < this.now ? this.now : t, seq: this.seq++, fn };
    const heap = this.heap;
    let i = heap.length;
    heap.push(ev);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent] as ClockEvent;
      if (p.t < ev.t || (p.t === ev.t && p.seq < ev.seq)) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = ev;
    if (heap.length > this.peak) this.peak = heap.length;
    return ev;
  }

  /** Runs `fn` now, after the callback running, before any later event. */
  soon(fn: () => void): void {
    this.immediate.push(fn);
  }

  /** Events still pending (cancelled timers included), for checks after a run. */
  pending(): readonly ClockEvent[] {
    return this.heap;
  }

  /**
   * Runs the next callback: a `soon` one, else the earliest event (advancing `now`). False when nothing is
   * left, or the next event lies beyond `until`.
   */
  step(until: number): boolean {
    if (this.immediateHead < this.immediate.length) {
      const fn = this.immediate[this.immediateHead++] as () => void;
      if (this.immediateHead === this.immediate.length) {
        this.immediate.length = 0;
        this.immediateHead = 0;
      }
      this.events++;
      fn();
      return true;
    }
    for (;;) {
      const ev = this.heap[0];
      if (ev === undefined || ev.t > until) return false;
      this.pop();
      const fn = ev.fn;
      if (fn === undefined) continue;
      ev.fn = undefined;
      this.now = ev.t;
      this.events++;
      fn();
      return true;
    }
  }

  private pop(): void {
    const heap = this.heap;
    const last = heap.pop() as ClockEvent;
    const n = heap.length;
    if (n === 0) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let c = l;
      const a = heap[l] as ClockEvent;
      if (r < n) {
        const b = heap[r] as ClockEvent;
        if (b.t < a.t || (b.t === a.t && b.seq < a.seq)) c = r;
      }
      const child = heap[c] as ClockEvent;
      if (last.t < child.t || (last.t === child.t && last.seq < child.seq)) break;
      heap[i] = child;
      i = c;
    }
    heap[i] = last;
  }
}
