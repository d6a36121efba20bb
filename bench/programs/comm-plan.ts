/**
 * The protocol both comm programs (comm-ranks.ts on workpool, raw-zmq.ts on bare zeromq.js) speak between
 * rank 0 and rank 1. The bench drives rank 0 one command at a time (see control.ts); rank 0 forwards the
 * command to rank 1, then both run it:
 * - ping: rank 0 sends `bytes`, rank 1 sends it back; each round trip after `warmup` is timed on its own;
 *   then rank 1 reports the CPU time it spent;
 * - stream: rank 0 sends `count` messages of `bytes` each, rank 1 receives them all (and checks the byte
 *   count), then sends one ack carrying its CPU time; rank 0's clock runs from its first send to the ack, so
 *   it covers delivery;
 * - quit: both leave.
 * CPU time (user + system of both processes, ZeroMQ's I/O threads included) is reported beside wall time:
 * what a message costs, where wall time is what it takes.
 */

export type CommCommand =
  | { readonly op: "ping"; readonly bytes: number; readonly warmup: number; readonly iterations: number }
  | { readonly op: "stream"; readonly bytes: number; readonly count: number }
  | { readonly op: "quit" };

/** Rank 0's answer to `ping`: every timed round trip, in microseconds. */
export interface PingResult {
  readonly samplesUs: number[];
  /** CPU time of rank 0 and rank 1 over the whole phase (warm-up included), microseconds. */
  readonly cpuUs: number;
}

/** Rank 0's answer to `stream`. */
export interface StreamResult {
  readonly seconds: number;
  /** CPU time of rank 0 and rank 1 over the timed stream, microseconds. */
  readonly cpuUs: number;
}

/** What rank 1 reports at the end of a phase. */
export interface Ack {
  readonly cpuUs: number;
}

/** Message tags of the workpool program. */
export const TAG = { command: 1, ping: 2, stream: 3, ack: 4 } as const;

/** CPU time (user + system) of this process since `since`, microseconds. */
export function cpuSince(since: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(since);
  return d.user + d.system;
}

/** Nanoseconds as a float, for timing loops. */
export function now(): number {
  return Number(process.hrtime.bigint());
}
