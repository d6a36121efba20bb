import type { Socket } from "node:net";

/** Where the preload leaves the lifeline socket for this module (a global: it survives duplicate loads). */
export const LIFELINE_KEY = Symbol.for("workpool.lifeline");

/** What the launcher asked the ranks to report, from the environment it set. */
export const REPORT = {
  stats: process.env.WORKPOOL_REPORT_STATS === "1",
  progress: process.env.WORKPOOL_REPORT_PROGRESS === "1",
  traceDir: process.env.WORKPOOL_TRACE_DIR || undefined,
};

/**
 * Sends one record to the launcher over the lifeline (a local socket; the write completes at once unless the
 * launcher stopped reading). Without a launcher it does nothing.
 */
export function report(record: Record<string, unknown>): void {
  const socket = (globalThis as Record<symbol, unknown>)[LIFELINE_KEY] as Socket | undefined;
  if (!socket || socket.destroyed) return;
  socket.write(`${JSON.stringify(record)}\n`);
}
