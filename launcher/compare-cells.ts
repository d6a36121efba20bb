import type { Row } from "./compare-types.ts";

/** A fraction as a percentage with one decimal. */
export const percent = (x: number): string => `${(x * 100).toFixed(1)}%`;

/** The measured columns of a row, from `ranks` on, as text: one list for the text table and the report. */
export function metricCells(r: Row, speedups: boolean): string[] {
  return [
    String(r.np),
    r.medianS.toFixed(3),
    r.minS.toFixed(3),
    r.maxS.toFixed(3),
    r.tasks.toLocaleString("en-US"),
    r.moved.toLocaleString("en-US"),
    r.messages.toLocaleString("en-US"),
    percent(r.idleFraction),
    percent(r.busyFraction),
    r.terminationMs.toFixed(2),
    ...(speedups ? [r.speedup?.toFixed(2) ?? "", r.efficiency === undefined ? "" : percent(r.efficiency)] : []),
  ];
}

/** The headings of `metricCells`, `termination` naming the latency column. */
export function metricHeads(speedups: boolean, termination: string): string[] {
  const head = ["ranks", "median s", "min s", "max s", "tasks", "moved", "pool msgs", "idle", "busy", termination];
  return speedups ? [...head, "speedup", "efficiency"] : head;
}
