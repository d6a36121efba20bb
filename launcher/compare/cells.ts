import type { Row, Spread } from "./types.ts";

/** A fraction as a percentage with one decimal. */
export const percent = (x: number): string => `${(x * 100).toFixed(1)}%`;

/** A figure's median, then its range over the runs when they differ as printed: `1.52 (1.40..1.61)`. */
export function spreadCell(s: Spread, format: (x: number) => string): string {
  const [lo, mid, hi] = [format(s.min), format(s.median), format(s.max)];
  return lo === hi ? mid : `${mid} (${lo}..${hi})`;
}

const count = (x: number) => Math.round(x).toLocaleString("en-US");

/**
 * The measured columns of a row, from `ranks` on, as text: one list for the text table and the report. Each
 * figure is its median over the runs, with its range when the runs differ (wall time has min and max columns).
 */
export function metricCells(r: Row, speedups: boolean): string[] {
  const s = r.spread;
  return [
    String(r.np),
    r.medianS.toFixed(3),
    r.minS.toFixed(3),
    r.maxS.toFixed(3),
    spreadCell(s.tasks, count),
    spreadCell(s.moved, count),
    spreadCell(s.messages, count),
    spreadCell(s.idleFraction, percent),
    spreadCell(s.busyFraction, percent),
    spreadCell(s.terminationMs, (x) => x.toFixed(2)),
    ...(speedups
      ? [
          s.speedup ? spreadCell(s.speedup, (x) => x.toFixed(2)) : "",
          s.efficiency ? spreadCell(s.efficiency, percent) : "",
        ]
      : []),
  ];
}

/** The headings of `metricCells`, `termination` naming the latency column. */
export function metricHeads(speedups: boolean, termination: string): string[] {
  const head = ["ranks", "median s", "min s", "max s", "tasks", "moved", "pool msgs", "idle", "busy", termination];
  return speedups ? [...head, "speedup", "efficiency"] : head;
}
