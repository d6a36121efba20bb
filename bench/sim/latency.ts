/**
 * What messages cost in the timed simulation (timed.ts), and the channels that carry them: a message arrives
 * `messageMs` (plus a seeded jitter of up to 10%) after it leaves, plus `perTaskMs` per task it carries, and never
 * before one sent earlier on its channel (FIFO, as ZeroMQ's); it costs its sender `sendCpuMs` and its receiver
 * `receiveCpuMs` of CPU, and a rank's sends and receipts take turns on its CPU (or on the few `cores` the ranks
 * share), so a root sending DONE to 4,095 ranks, or a rank answering a thousand requests, takes time that grows
 * with their number. Ranks start at seeded times spread over `startSkewMs`; before its start a rank holds what
 * arrives, as a real rank stashes messages for a pool it has not started to run.
 *
 * Invariant: the same latency, size and seed give the same times, message for message: a run replays exactly.
 */
import { seededRandom } from "../../lib/internal.ts";
import type { VirtualClock } from "./clock.ts";

/**
 * What messages cost: `messageMs` in flight per message (plus a seeded jitter of up to 10%), plus `perTaskMs`
 * per task carried; `sendCpuMs` and `receiveCpuMs` of the sending and the receiving rank's CPU per message;
 * and ranks starting spread over `startSkewMs`.
 */
export interface Latency {
  readonly messageMs: number;
  readonly perTaskMs: number;
  /** @default 0 */
  readonly sendCpuMs?: number;
  /** @default 0 */
  readonly receiveCpuMs?: number;
  /** @default 0 */
  readonly startSkewMs?: number;
  /**
   * CPUs the ranks share for that per-message work (a machine with fewer cores than ranks, as the real 64-rank
   * runs on 2 cores); each rank's own messages still take turns. @default one per rank
   */
  readonly cores?: number;
}

/**
 * About a message between two processes over loopback ZeroMQ, a few microseconds to encode a task, and the
 * CPU a Node.js rank spends to encode and hand over a small message (send), and to take, decode and route one
 * (receive); ranks leave the barrier before `run` within a millisecond.
 */
export const DEFAULT_LATENCY: Latency = {
  messageMs: 0.05,
  perTaskMs: 0.002,
  sendCpuMs: 0.005,
  receiveCpuMs: 0.01,
  startSkewMs: 1,
};

export function describeLatency(l: Latency = DEFAULT_LATENCY): string {
  return (
    `each message arrives ${l.messageMs * 1000} us after it leaves (+ up to 10% seeded jitter) + ${l.perTaskMs * 1000} us ` +
    `per task it carries, and costs ${(l.sendCpuMs ?? 0) * 1000} us of its sender's CPU and ${(l.receiveCpuMs ?? 0) * 1000} us ` +
    `of its receiver's${l.cores === undefined ? "" : ` on ${l.cores} shared cores`}; FIFO channels; ranks start spread over ` +
    `${l.startSkewMs ?? 0} ms; timers fire at virtual times`
  );
}

/** The CPUs and channels of the simulated ranks, on the simulation's virtual clock. */
export class Wire {
  private readonly messageMs: number;
  private readonly perTaskMs: number;
  private readonly sendCpu: number;
  private readonly receiveCpu: number;
  /** When each rank's CPU is next free: its sends and receipts take turns on it. */
  private readonly cpuFree: Float64Array;
  /** With `cores`: when each shared core is next free. */
  private readonly coreFree: Float64Array | undefined;
  /** When the last message sent on each channel arrives (FIFO channels). */
  private readonly channelLast: Float64Array;
  private readonly jitter: () => number;

  constructor(
    latency: Latency,
    private readonly size: number,
    seed: number,
    private readonly clock: VirtualClock,
  ) {
    this.messageMs = latency.messageMs;
    this.perTaskMs = latency.perTaskMs;
    this.sendCpu = latency.sendCpuMs ?? 0;
    this.receiveCpu = latency.receiveCpuMs ?? 0;
    this.cpuFree = new Float64Array(size);
    this.coreFree = latency.cores === undefined ? undefined : new Float64Array(Math.max(1, latency.cores));
    this.channelLast = new Float64Array(size * size);
    this.jitter = seededRandom(seed * 7919 + 13);
  }

  /** Rank `rank` starts at `t`: its CPU takes nothing before. */
  startAt(rank: number, t: number): void {
    this.cpuFree[rank] = t;
  }

  /** When a message that `source` sends `dest` now, carrying `carried` tasks, arrives (its send costs CPU). */
  arrival(source: number, dest: number, carried: number): number {
    let leaves = this.clock.now;
    if (this.sendCpu > 0) leaves = this.cpu(source, this.sendCpu);
    let t = leaves + this.messageMs * (1 + 0.1 * this.jitter()) + carried * this.perTaskMs;
    const key = source * this.size + dest;
    const last = this.channelLast[key] as number;
    if (t < last) t = last;
    this.channelLast[key] = t;
    return t;
  }

  /**
   * A message arrived at `dest`: when its CPU has taken it (after earlier ones: FIFO kept), or undefined when
   * that is now.
   */
  received(dest: number): number | undefined {
    if (this.receiveCpu === 0 && (this.cpuFree[dest] as number) <= this.clock.now) return undefined;
    return this.cpu(dest, this.receiveCpu);
  }

  /** Runs `cost` ms of rank r's CPU work from now on: after its earlier work, on the first free shared core. */
  private cpu(rank: number, cost: number): number {
    let start = Math.max(this.clock.now, this.cpuFree[rank] as number);
    const coreFree = this.coreFree;
    if (coreFree !== undefined) {
      let c = 0;
      for (let i = 1; i < coreFree.length; i++) if ((coreFree[i] as number) < (coreFree[c] as number)) c = i;
      start = Math.max(start, coreFree[c] as number);
      coreFree[c] = start + cost;
    }
    this.cpuFree[rank] = start + cost;
    return start + cost;
  }
}
