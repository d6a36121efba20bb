/**
 * The channels between simulated ranks, for the simulations that choose which message arrives next
 * (test/helpers/simulation.ts, resilient-sim.ts, surviving-sim.ts): every message sent waits in one in-flight
 * list, numbered in the order sent on its channel (source to destination), until the scheduler takes one out,
 * from any position (channels reorder, as the engines allow) or the oldest of a channel (FIFO, as ZeroMQ's).
 * A message that arrives before one sent earlier on its channel counts as an overtake, so that a test can see
 * that its schedules did reorder.
 *
 * Invariant: a body in flight is the sender's copy at the time of sending (structured clone): no rank sees
 * another's later changes to it. The timed simulation has channels of its own (bench/sim/latency.ts: messages
 * arrive in time order) and shares only `copyBody`, a cheaper copy for its sizes.
 */
import type { PoolLink } from "../lib/internal.ts";

export interface InFlight {
  readonly source: number;
  readonly dest: number;
  readonly tag: number;
  readonly body: Record<string, unknown>;
  /** Order of sending on its channel, from 1. */
  readonly seq: number;
}

export class Network {
  /** Every message sent and not yet taken, in the order sent. */
  readonly inFlight: InFlight[] = [];
  /** Messages that arrived before one sent earlier on their channel. */
  overtakes = 0;
  private readonly channelSeq = new Map<number, number>();
  private readonly lastArrived = new Map<number, number>();

  constructor(readonly size: number) {}

  /**
   * Rank `rank`'s end: each send goes into flight, unless `admit` says otherwise (a check of the destination,
   * a dead sender whose sends go nowhere). `fifo` is what the link promises the engine.
   */
  link(rank: number, admit?: (dest: number, tag: number) => boolean, fifo?: boolean): PoolLink {
    return {
      rank,
      size: this.size,
      send: (dest, tag, body) => {
        if (admit === undefined || admit(dest, tag)) this.send(rank, dest, tag, body);
        return 0;
      },
      ...(fifo === undefined ? {} : { fifo }),
    };
  }

  send(source: number, dest: number, tag: number, body: Record<string, unknown>): void {
    const key = source * this.size + dest;
    const seq = (this.channelSeq.get(key) ?? 0) + 1;
    this.channelSeq.set(key, seq);
    this.inFlight.push({ source, dest, tag, body: structuredClone(body), seq });
  }

  /** The position of the oldest message in flight on the channel of the message at position `i`. */
  oldestOnChannel(i: number): number {
    const inFlight = this.inFlight;
    const { source, dest } = inFlight[i] as InFlight;
    for (let j = 0; j < inFlight.length; j++) {
      const o = inFlight[j] as InFlight;
      if (o.source === source && o.dest === dest && o.seq < (inFlight[i] as InFlight).seq) i = j;
    }
    return i;
  }

  /** Takes the message at position `i` out of flight (lost, or about to arrive: then call `arrived`). */
  take(i: number): InFlight {
    return this.inFlight.splice(i, 1)[0] as InFlight;
  }

  /** Notes that `m` arrives: an overtake if a message sent after it on its channel arrived before it. */
  arrived(m: InFlight): void {
    const key = m.source * this.size + m.dest;
    if (m.seq < (this.lastArrived.get(key) ?? 0)) this.overtakes++;
    else this.lastArrived.set(key, m.seq);
  }

  /** Drops every message in flight from `source` (its receivers learnt of its death). */
  dropFrom(source: number): void {
    const inFlight = this.inFlight;
    for (let i = inFlight.length - 1; i >= 0; i--)
      if ((inFlight[i] as InFlight).source === source) inFlight.splice(i, 1);
  }
}

/**
 * What the receiver decodes: a copy, so that no rank sees another's later changes to a body. The tasks of a
 * task message (`t`, and `q`) are copied as arrays of the same task objects, which nothing changes: cloning
 * hundreds of thousands of moved tasks deeply was most of a 1024-rank run's time.
 */
export function copyBody(body: Record<string, unknown>): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const k in body)
    copy[k] = (k === "t" || k === "q") && Array.isArray(body.t) ? (body[k] as unknown[]).slice() : copyValue(body[k]);
  return copy;
}

/** A deep copy of what a message may hold (numbers, strings, arrays, plain objects); faster than structuredClone. */
function copyValue(v: unknown): unknown {
  if (typeof v !== "object" || v === null) return v;
  if (Array.isArray(v)) return v.map(copyValue);
  if (Object.getPrototypeOf(v) !== Object.prototype) return structuredClone(v);
  const out: Record<string, unknown> = {};
  for (const k in v) out[k] = copyValue((v as Record<string, unknown>)[k]);
  return out;
}
