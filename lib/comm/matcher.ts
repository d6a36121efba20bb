import { AbortError, ClosedError } from "../errors.ts";

/** A timer that only keeps the process alive (`receive` with a signal): as long as node allows. */
const KEEP_ALIVE_MS = 2 ** 31 - 1;

/** Wildcard for `source` or `tag` in a receive. */
export const ANY = -1;

export interface Message<T = unknown> {
  readonly source: number;
  readonly tag: number;
  readonly data: T;
}

/** What a receive waits for (Communicator#recv): a message matching `source` and `tag`. */
export interface RecvOptions {
  /** Rank to receive from, or ANY. @default ANY */
  readonly source?: number;
  /** Tag to receive, or ANY. @default ANY */
  readonly tag?: number;
  /** Abort the wait: the promise rejects with AbortError and no message is consumed. */
  readonly signal?: AbortSignal;
}

interface Queued extends Message {
  readonly seq: number;
}

interface Pending {
  readonly source: number;
  readonly tag: number;
  /** The call that posted it, for the error that may end it. */
  readonly call: string;
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
  private readonly bySource = new Map<number, SourceQueue>();
  private pending: Pending[] = [];
  private seq = 0;
  private queued = 0;
  /** Once set (close or failure), what every pending and later receive rejects with. */
  private refusal: ((call: string) => Error) | undefined;
  /** Sources that died (see `peerDied`) or closed (`peerLeft`), with what a receive naming one rejects with. */
  private readonly dead = new Map<number, (call: string) => Error>();
  /** Every other source closed or died (`peerLeft`): what a receive from any source rejects with. */
  private noneLeft: ((call: string) => Error) | undefined;
  /** Of `dead`, the sources that closed (`peerLeft`). */
  private readonly left = new Set<number>();

  /** Number of messages waiting for a receive. */
  get size(): number {
    return this.queued;
  }

  /** Number of receives waiting for a message. */
  get waiting(): number {
    return this.pending.length;
  }

  /**
   * The receives waiting, as `recv (from rank 1, tag 5)`: for a message saying what a process waits for. `how`:
   * the tag as a collective's step (`collective step 5`: its sequence number) or left out; the call named
   * otherwise; ranks named otherwise (`rank 3 of the world`).
   */
  describePending(how: Describing = {}): string[] {
    return this.pending.map((p) => described(p, how));
  }

  /** The messages no receive took, by sender and tag, as `from rank 0, tag 5` (`(3 messages)` when more). */
  describeQueued(rank: (source: number) => string = (r) => `rank ${r}`): string[] {
    const out: string[] = [];
    for (const source of this.bySource.keys()) {
      for (const tags of this.queuedTags(source)) out.push(`from ${rank(source)}, ${tags}`);
    }
    return out;
  }

  /** The messages from `source` no receive took, by tag, as `tag 5` (`tag 5 (3 messages)` when more). */
  queuedTags(source: number): string[] {
    const byTag = new Map<number, number>();
    for (const m of this.bySource.get(source)?.list() ?? []) byTag.set(m.tag, (byTag.get(m.tag) ?? 0) + 1);
    return [...byTag].map(([tag, n]) => `tag ${tag}${n > 1 ? ` (${n} messages)` : ""}`);
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
      q = new SourceQueue();
      this.bySource.set(source, q);
    }
    q.push({ source, tag, data, seq: this.seq++ });
    this.queued++;
  }

  /** Removes and returns the earliest queued message matching (source, tag), if any. */
  take(source: number, tag: number): Message | undefined {
    if (this.queued === 0) return undefined;
    if (source !== ANY) return this.takeFrom(this.bySource.get(source), tag);
    let best: SourceQueue | undefined;
    let bestIndex = -1;
    let bestSeq = Number.POSITIVE_INFINITY;
    for (const q of this.bySource.values()) {
      const i = q.indexOfTag(tag);
      if (i >= 0 && q.at(i).seq < bestSeq) {
        best = q;
        bestIndex = i;
        bestSeq = q.at(i).seq;
      }
    }
    return best ? this.removeAt(best, bestIndex) : undefined;
  }

  private takeFrom(q: SourceQueue | undefined, tag: number): Message | undefined {
    if (!q) return undefined;
    const i = q.indexOfTag(tag);
    return i < 0 ? undefined : this.removeAt(q, i);
  }

  private removeAt(q: SourceQueue, i: number): Message {
    const m = q.removeAt(i);
    this.queued--;
    return { source: m.source, tag: m.tag, data: m.data };
  }

  /**
   * Waits for a matching message. Rejects with AbortError when `signal` aborts (the receive is withdrawn and
   * consumes nothing), with ClosedError after `close`, with `fail`'s error after `fail`. A receive naming a
   * source that died (`peerDied`) still takes what that source sent before; with nothing of it queued, it
   * rejects at once with the error `peerDied` was given.
   */
  receive(source: number, tag: number, signal: AbortSignal | undefined, call: string): Promise<Message> {
    if (this.refusal) return Promise.reject(this.refusal(call));
    if (signal?.aborted) return Promise.reject(new AbortError(`${call} aborted`, { cause: signal.reason }));
    const m = this.take(source, tag);
    if (m) return Promise.resolve(m);
    const dead = source === ANY ? this.noneLeft : this.dead.get(source);
    // (A closed source's error names the receive as a pending one's does: `recv (from rank 1, tag 5)`.)
    if (dead)
      return Promise.reject(dead(source === ANY || this.left.has(source) ? described({ source, tag, call }) : call));
    return new Promise<Message>((resolve, reject) => {
      const p: Pending = { source, tag, call, resolve, reject, cleanup: undefined };
      if (signal) {
        // The process stays up while the receive waits for its signal: `AbortSignal.timeout`'s timer keeps
        // nothing alive, so a one-rank job (no socket) ended before its timeout could fire, where ranks of a
        // larger one got their AbortError.
        const alive = setInterval(() => {}, KEEP_ALIVE_MS);
        const onAbort = () => {
          clearInterval(alive);
          const i = this.pending.indexOf(p);
          if (i >= 0) this.pending.splice(i, 1);
          reject(new AbortError(`${call} aborted`, { cause: signal.reason }));
        };
        signal.addEventListener("abort", onAbort, { once: true });
        p.cleanup = () => {
          clearInterval(alive);
          signal.removeEventListener("abort", onAbort);
        };
      }
      this.pending.push(p);
    });
  }

  /**
   * Rejects every pending receive, and every later one, with ClosedError "<call>: <reason>". Queued messages
   * stay readable by `take`.
   */
  close(reason: string): void {
    this.refuse((call) => new ClosedError(`${call}: ${reason}`));
  }

  /**
   * Rejects every pending receive, and every later one, with `error(call)` (the call that posted it). Queued
   * messages stay readable by `take`. After `close` or an earlier `fail` it does nothing.
   */
  fail(error: (call: string) => Error): void {
    if (!this.refusal) this.refuse(error);
  }

  /**
   * Source `source` died: every pending receive that names it or ANY source (it could be waiting for that
   * one, as in MPI ULFM), or with `everyPending` every pending receive, rejects with `error(call)`; a later
   * receive naming it rejects at once unless a message of it is queued; later ANY-source receives work as
   * before. Only the first call per source counts.
   */
  peerDied(source: number, error: (call: string) => Error, everyPending = false): void {
    if (this.dead.has(source)) return;
    this.dead.set(source, error);
    this.endPending(
      (p) => everyPending || p.source === ANY || p.source === source,
      (p) => error(p.call),
    );
  }

  /**
   * Source `source` closed, and everything it sent has arrived: every pending receive that names it rejects with
   * `error(call)`, and so does a later one unless a message of it is queued (as after `peerDied`); receives
   * from any source too when `allGone` (every other source closed or died). Only the first call per source
   * counts.
   */
  peerLeft(source: number, allGone: boolean, error: (call: string) => Error): void {
    if (this.dead.has(source)) return;
    this.dead.set(source, error);
    this.left.add(source);
    if (allGone) this.noneLeft = error;
    this.endPending(
      (p) => p.source === source || (allGone && p.source === ANY),
      (p) => error(described(p)),
    );
  }

  /** Rejects, with `error(p)`, every pending receive `p` that `ends`; the others go on waiting. */
  private endPending(ends: (p: Pending) => boolean, error: (p: Pending) => Error): void {
    const kept: Pending[] = [];
    const ended: Pending[] = [];
    for (const p of this.pending) (ends(p) ? ended : kept).push(p);
    this.pending = kept;
    for (const p of ended) {
      p.cleanup?.();
      p.reject(error(p));
    }
  }

  private refuse(error: (call: string) => Error): void {
    this.refusal = error;
    const pending = this.pending;
    this.pending = [];
    for (const p of pending) {
      p.cleanup?.();
      p.reject(error(p.call));
    }
  }
}

/** How `describePending` says a receive (see there). */
export interface Describing {
  /** `none`: without the tag. */
  readonly tag?: "none";
  /** The tag is a collective's: said as its step, which this gives. */
  readonly step?: (tag: number) => number;
  readonly call?: string;
  readonly rank?: (source: number) => string;
}

/** A receive as `recv (from rank 1, tag 5)`. */
function described(
  p: { readonly source: number; readonly tag: number; readonly call: string },
  how: Describing = {},
): string {
  const from = p.source === ANY ? "any rank" : (how.rank?.(p.source) ?? `rank ${p.source}`);
  const tag =
    p.tag === ANY || how.tag === "none" ? "" : how.step ? `; collective step ${how.step(p.tag)}` : `, tag ${p.tag}`;
  return `${how.call ?? p.call} (from ${from}${tag})`;
}

/**
 * One source's unexpected messages, oldest first. Taking the oldest is O(1): `Array#shift` copies the whole
 * array once it is long, which made a receiver that fell 100k messages behind quadratic.
 */
class SourceQueue {
  private items: (Queued | undefined)[] = [];
  private head = 0;

  push(m: Queued): void {
    this.items.push(m);
  }

  /** Position of the oldest message with `tag` (or any tag), or -1. */
  indexOfTag(tag: number): number {
    const items = this.items;
    if (this.head === items.length) return -1;
    if (tag === ANY) return this.head;
    for (let i = this.head; i < items.length; i++) if ((items[i] as Queued).tag === tag) return i;
    return -1;
  }

  at(i: number): Queued {
    return this.items[i] as Queued;
  }

  /** The messages queued, oldest first. */
  list(): Queued[] {
    return this.items.slice(this.head) as Queued[];
  }

  removeAt(i: number): Queued {
    const items = this.items;
    const m = items[i] as Queued;
    if (i !== this.head) {
      items.splice(i, 1);
      return m;
    }
    items[i] = undefined;
    this.head++;
    if (this.head === items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= items.length) {
      this.items = items.slice(this.head);
      this.head = 0;
    }
    return m;
  }
}
