import { AbortError, ClosedError } from "../errors.ts";

/** Wildcard for `source` or `tag` in a receive. */
export const ANY = -1;

export interface Message<T = unknown> {
  readonly source: number;
  readonly tag: number;
  readonly data: T;
}

interface Queued extends Message {
  readonly seq: number;
}

interface Pending {
  readonly source: number;
  readonly tag: number;
  readonly resolve: (m: Message) => void;
  readonly reject: (e: Error) => void;
  cleanup: (() => void) | undefined;
}

/**
 * Matches arriving messages to receives for one message context (user point-to-point, collectives, or one
 * pool), with MPI's rules:
 * - a message goes to the earliest posted receive that matches it; if none, it is queued, never dropped;
 * - a receive takes the earliest queued message that matches it, so two messages from one sender that both
 *   match arrive in the order sent (non-overtaking).
 * Unexpected messages are kept per source, so a receive naming its source never scans other sources' traffic.
 */
export class Matcher {
  private readonly bySource = new Map<number, Queued[]>();
  private pending: Pending[] = [];
  private seq = 0;
  private queued = 0;
  private closedReason: string | undefined;

  /** Number of messages waiting for a receive. */
  get size(): number {
    return this.queued;
  }

  deliver(source: number, tag: number, data: unknown): void {
    const pending = this.pending;
    for (let i = 0; i < pending.length; i++) {
      const p = pending[i] as Pending;
      if ((p.source === ANY || p.source === source) && (p.tag === ANY || p.tag === tag)) {
        pending.splice(i, 1);
        p.cleanup?.();
        p.resolve({ source, tag, data });
        return;
      }
    }
    let q = this.bySource.get(source);
    if (!q) {
      q = [];
      this.bySource.set(source, q);
    }
    q.push({ source, tag, data, seq: this.seq++ });
    this.queued++;
  }

  /** Removes and returns the earliest queued message matching (source, tag), if any. */
  take(source: number, tag: number): Message | undefined {
    if (this.queued === 0) return undefined;
    if (source !== ANY) return this.takeFrom(this.bySource.get(source), tag);
    let best: Queued[] | undefined;
    let bestIndex = -1;
    let bestSeq = Number.POSITIVE_INFINITY;
    for (const q of this.bySource.values()) {
      const i = indexOfTag(q, tag);
      if (i >= 0 && (q[i] as Queued).seq < bestSeq) {
        best = q;
        bestIndex = i;
        bestSeq = (q[i] as Queued).seq;
      }
    }
    return best ? this.removeAt(best, bestIndex) : undefined;
  }

  private takeFrom(q: Queued[] | undefined, tag: number): Message | undefined {
    if (!q) return undefined;
    const i = indexOfTag(q, tag);
    return i < 0 ? undefined : this.removeAt(q, i);
  }

  private removeAt(q: Queued[], i: number): Message {
    const m = (i === 0 ? q.shift() : q.splice(i, 1)[0]) as Queued;
    this.queued--;
    return { source: m.source, tag: m.tag, data: m.data };
  }

  /** Waits for a matching message. Rejects with AbortError when `signal` aborts, ClosedError on close. */
  receive(source: number, tag: number, signal: AbortSignal | undefined, call: string): Promise<Message> {
    if (this.closedReason) return Promise.reject(new ClosedError(`${call}: ${this.closedReason}`));
    const m = this.take(source, tag);
    if (m) return Promise.resolve(m);
    if (signal?.aborted) return Promise.reject(new AbortError(`${call} aborted`, { cause: signal.reason }));
    return new Promise<Message>((resolve, reject) => {
      const p: Pending = { source, tag, resolve, reject, cleanup: undefined };
      if (signal) {
        const onAbort = () => {
          const i = this.pending.indexOf(p);
          if (i >= 0) this.pending.splice(i, 1);
          reject(new AbortError(`${call} aborted`, { cause: signal.reason }));
        };
        signal.addEventListener("abort", onAbort, { once: true });
        p.cleanup = () => signal.removeEventListener("abort", onAbort);
      }
      this.pending.push(p);
    });
  }

  /** Rejects every pending receive and refuses new ones. Queued messages stay readable by `take`. */
  close(reason: string): void {
    this.closedReason = reason;
    const pending = this.pending;
    this.pending = [];
    for (const p of pending) {
      p.cleanup?.();
      p.reject(new ClosedError(reason));
    }
  }
}

function indexOfTag(q: Queued[], tag: number): number {
  if (q.length === 0) return -1;
  if (tag === ANY) return 0;
  for (let i = 0; i < q.length; i++) if ((q[i] as Queued).tag === tag) return i;
  return -1;
}
