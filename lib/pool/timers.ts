import type { Cancel } from "./strategy.ts";

/**
 * Where an engine gets its timers: the event loop's, or a simulation's (sim/timers.ts, held until the
 * scheduler fires them; bench/sim's virtual clock), so that a schedule replays from its seed.
 */
export interface Timers {
  /** Calls `fn` after `ms` milliseconds, unless cancelled. */
  after(ms: number, fn: () => void): Cancel;
  /** Calls `fn` after the current event-loop turn (setImmediate). */
  soon(fn: () => void): void;
  /** The time now, in ms (performance.now(), or the simulation's clock). */
  now(): number;
}

export const EVENT_LOOP_TIMERS: Timers = {
  after(ms, fn) {
    const t = setTimeout(fn, ms);
    return () => clearTimeout(t);
  },
  soon: (fn) => setImmediate(fn),
  now: () => performance.now(),
};
