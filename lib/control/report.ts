import { ENV } from "../comm/env.ts";
import type { ControlChannel } from "./channel.ts";
import type { RankRecord } from "./records.ts";

/** Where the preload leaves the control channel for this module (a global: it survives duplicate loads). */
export const CONTROL_KEY = Symbol.for("workpool.control");

/** What the launcher asked the ranks to report, from the environment it set. */
export const REPORT = {
  stats: process.env[ENV.reportStats] === "1",
  progress: process.env[ENV.reportProgress] === "1",
  trace: process.env[ENV.reportTrace] === "1",
};

/**
 * Sends one record to the launcher over the control channel (it waits in order while the channel is still
 * connecting; once connected, a local write completes at once unless the launcher stopped reading). Without a
 * launcher it does nothing.
 */
export function report(record: RankRecord): void {
  const channel = (globalThis as Record<symbol, unknown>)[CONTROL_KEY] as ControlChannel | undefined;
  channel?.send(record);
}

/** The records this process has read from its launcher (0 without one). */
export function launcherRecordsHeard(): number {
  const channel = (globalThis as Record<symbol, unknown>)[CONTROL_KEY] as ControlChannel | undefined;
  return channel?.heard ?? 0;
}

/** True when this process has a launcher's control channel (`workpool launch`), not under mpirun, srun or alone. */
export function hasLauncher(): boolean {
  return (globalThis as Record<symbol, unknown>)[CONTROL_KEY] !== undefined;
}
