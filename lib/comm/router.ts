import { ENV, envMs } from "./env.ts";
import { ClosedError, RankFailedError } from "../errors.ts";
import { decodeFrame, decodeSplit, encodeMessage } from "./codec.ts";
import type { CollectiveChannel } from "./collectives.ts";
import * as coll from "./collectives.ts";
import { ANY, Matcher } from "./matcher.ts";
import type { Transport } from "./transport.ts";
import { appZmqWaiting } from "./zmq-activity.ts";

/**
 * Message contexts are u32 numbers, like MPI communicator contexts: traffic in one never matches receives in
 * another. Each communicator owns a block of them: its point-to-point context, its collective context, then
 * one per pool it makes. The world's block is [0, WORLD_CONTEXTS); a sub-communicator's (World#split) is
 * SUB_CONTEXTS long, above the world's. The largest u32 is `close`'s own.
 */
export const CONTEXT = { user: 0, collective: 1, firstFree: 2 } as const;
export const WORLD_CONTEXTS = 2 ** 24;
export const SUB_CONTEXTS = 2 ** 12;
export const CLOSE_CONTEXT = 2 ** 32 - 1;

/** Handler that takes every message of one context as it arrives (used by pools). */
export type ContextListener = (source: number, tag: number, data: unknown) => void;

/** How often the idle watch looks (see Router.watchIdle): an app that forgot close() ends within ~2x this. */
const IDLE_CHECK_MS = envMs(ENV.idleCheckMs, 1000);
/** Resources a rank has from the start (its stdio): only more of them than at start count as activity. */
const STDIO = new Set(["PipeWrap", "TTYWrap"]);

/** How many resources of each type keep the event loop alive now (`stdio`: only those of STDIO's types). */
function resourceCounts(stdio = false): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of process.getActiveResourcesInfo()) {
    if (!stdio || STDIO.has(r)) counts.set(r, (counts.get(r) ?? 0) + 1);
  }
  return counts;
}

/** True if `now` has a resource type more often than `base`. */
function beyond(now: Map<string, number>, base: Map<string, number>): boolean {
  for (const [type, n] of now) if (n > (base.get(type) ?? 0)) return true;
  return false;
}

/**
 * One process's messaging, shared by the world and every communicator split from it: the transport, the
 * matcher or listener of each context, what `close` counts, and the failure of the receive loop. Ranks here are
 * world ranks; a communicator translates its own before calling in. The `source` of a message is the sender's
 * rank in the communicator it was sent in (the header carries it), so receives see their communicator's ranks.
 */
export class Router {
  /** This process's world rank and the world's size. */
  readonly rank: number;
  readonly size: number;
  private transport: Transport | undefined;
  private readonly matchers = new Map<number, Matcher>();
  private readonly listeners = new Map<number, ContextListener>();
  /** Messages sent to each other rank, and received from other ranks (`close`'s own excepted). */
  private readonly sentTo: number[];
  private received = 0;
  /** While `close` waits for messages still on their way here: how many in all, and what to wake. */
  private drain: { readonly expected: number; readonly resolve: () => void } | undefined;
  /** Why the receive loop failed (see `fail`); undefined while it works. */
  private failureCause: Error | undefined;
  private readonly failureListeners = new Set<(error: RankFailedError) => void>();
  private closing: Promise<void> | undefined;
  /**
   * The first context no communicator on this process owns: a split agrees on the largest over its members
   * and carves the new blocks from there (split.ts), so the blocks of any two communicators a process is in
   * never overlap.
   */
  nextBlock = WORLD_CONTEXTS;
  /** A split is running on this process (see split.ts: two at once could be given the same block). */
  splitting = false;
  /** Pool runs (and the like) in progress here: see `hold`. */
  private holds = 0;

  constructor(rank: number, size: number) {
    this.rank = rank;
    this.size = size;
    this.sentTo = new Array<number>(size).fill(0);
  }

  attach(transport: Transport): void {
    this.transport = transport;
    this.watchIdle();
  }

  /** Every frame from the transport, or (with `body`) a message that travelled split. */
  readonly onFrame = (frame: Buffer, body?: Buffer): void => {
    // A frame that does not decode, or a listener that throws, throws out of here: the transport's receive
    // loop then stops and calls `fail`.
    if (body) decodeSplit(frame, body, this.onRemote);
    else decodeFrame(frame, this.onRemote);
  };

  /** One callback for every frame: no closure to create (and, under tsx, to name) per frame. */
  private readonly onRemote = (source: number, context: number, tag: number, data: unknown): void => {
    if (context !== CLOSE_CONTEXT) {
      this.received++;
      if (this.drain && this.received >= this.drain.expected) this.drain.resolve();
    }
    this.dispatch(source, context, tag, data);
  };

  private readonly dispatch = (source: number, context: number, tag: number, data: unknown): void => {
    const listener = this.listeners.get(context);
    if (listener) listener(source, tag, data);
    else this.matcher(context).deliver(source, tag, data);
  };

  matcher(context: number): Matcher {
    let m = this.matchers.get(context);
    if (!m) {
      m = new Matcher();
      if (this.closing && context !== CLOSE_CONTEXT) m.close("the world was closed");
      else if (this.failureCause) m.fail(this.failedError);
      this.matchers.set(context, m);
    }
    return m;
  }

  /** Routes every message of `context` to `listener`, first the ones already queued; undefined stops that. */
  listen(context: number, listener: ContextListener | undefined): void {
    if (!listener) {
      this.listeners.delete(context);
      return;
    }
    this.listeners.set(context, listener);
    const m = this.matchers.get(context);
    if (m) {
      for (let msg = m.take(ANY, ANY); msg; msg = m.take(ANY, ANY)) listener(msg.source, msg.tag, msg.data);
    }
  }

  /**
   * The one way out for an encoded message: to this process in a microtask, else to the transport, counted for
   * `close` (unless it is close's own). Returns the transport's back-pressure promise, if any. After close()
   * counted what was sent, nothing else may leave (a collective still running, say): ClosedError.
   */
  hand(dest: number, bytes: Buffer, counted: boolean, call: string): Promise<void> | undefined {
    if (dest === this.rank) {
      queueMicrotask(() => {
        try {
          decodeFrame(bytes, this.dispatch);
        } catch (e) {
          this.fail(e as Error);
        }
      });
      return undefined;
    }
    const t = this.transport;
    if (!t) throw new ClosedError(`${call}: no transport`);
    if (counted) {
      if (this.closing) throw new ClosedError(`${call}: the world is closed`);
      this.sentTo[dest]!++;
    }
    const backPressure = t.enqueue(dest, bytes);
    if (backPressure === undefined) return undefined;
    // Waiting for a slow peer to take what was sent is not idle (watchIdle).
    const release = this.hold();
    return backPressure.finally(release);
  }

  /** A message a pool encoded; one for another rank after close (a pool's late one) is dropped. */
  handLate(dest: number, bytes: Buffer): void {
    if (dest !== this.rank && (this.closing || !this.transport)) return;
    void this.hand(dest, bytes, true, "pool");
  }

  get isClosed(): boolean {
    return this.closing !== undefined;
  }

  /** The error a call (or, without `call`, a pool) gets from a failed process. */
  readonly failedError = (call?: string): RankFailedError => {
    const cause = this.failureCause as Error;
    const what = `rank ${this.rank} failed, it can no longer receive: ${cause.message}`;
    return new RankFailedError(this.rank, call ? `${call}: ${what}` : what, { cause });
  };

  get failed(): boolean {
    return this.failureCause !== undefined;
  }

  get failure(): RankFailedError | undefined {
    return this.failureCause ? this.failedError() : undefined;
  }

  /** See World#fail. */
  fail(cause: Error): void {
    if (this.failureCause) return;
    this.failureCause = cause;
    for (const m of this.matchers.values()) m.fail(this.failedError);
    const error = this.failedError();
    for (const listener of [...this.failureListeners]) listener(error);
    this.failureListeners.clear();
  }

  /** See World#onFailure. */
  onFailure(listener: (error: RankFailedError) => void): () => void {
    if (this.failureCause) {
      listener(this.failedError());
      return () => {};
    }
    this.failureListeners.add(listener);
    return () => this.failureListeners.delete(listener);
  }

  /**
   * Marks this process busy on something the receive side cannot see (a pool run between messages); call
   * the returned function when done. See `watchIdle`.
   */
  hold(): () => void {
    this.holds++;
    let released = false;
    return () => {
      if (!released) this.holds--;
      released = true;
    };
  }

  /**
   * An app that never calls close() would otherwise hang for ever: the open sockets keep the process alive
   * after its last statement. Every IDLE_CHECK_MS (an unref'd timer, which keeps nothing alive) this looks
   * for anything still to happen: a receive or collective waiting, a pool run, a send or receive on a ZeroMQ
   * socket of the app's (zmq-activity.ts: Node does not list those), or any resource keeping the
   * event loop alive beyond what it was at start (stdio pipes), such as a timer, a socket or a child process
   * of the app's. Twice in a row nothing: the app is done but did not close, or waits on a promise nothing
   * can settle. The rank says so and exits 1, so the launcher names it and brings the job down.
   */
  private watchIdle(): void {
    const baseline = resourceCounts(true);
    let strikes = 0;
    const timer = setInterval(() => {
      if (this.closing || this.failureCause) {
        clearInterval(timer);
        return;
      }
      let waiting = this.holds + appZmqWaiting();
      for (const m of this.matchers.values()) waiting += m.waiting;
      if (waiting > 0 || beyond(resourceCounts(), baseline)) {
        strikes = 0;
        return;
      }
      if (++strikes < 2) return;
      clearInterval(timer);
      process.stderr.write(
        `workpool: rank ${this.rank}: the app has nothing left to do and never called world.close() ` +
          "(or it awaits something nothing can settle); every rank must close its world\n",
      );
      process.exit(1);
    }, IDLE_CHECK_MS);
    timer.unref();
  }

  /** See World#close: the collective end of the whole process's messaging. */
  close(): Promise<void> {
    if (!this.closing) {
      for (const [context, m] of this.matchers) if (context !== CLOSE_CONTEXT) m.close("the world was closed");
      this.closing = this.transport?.flush() ?? Promise.resolve();
      this.finish().catch((e: unknown) => {
        process.emitWarning(`workpool rank ${this.rank}: close failed: ${(e as Error).message}`);
      });
    }
    return this.closing;
  }

  private async finish(): Promise<void> {
    const transport = this.transport;
    if (!transport) return;
    try {
      // A failed process cannot take part in close's collective: it only closes its sockets.
      if (this.failureCause) return;
      // What every rank sent to every other, summed: the messages on their way here are the difference.
      const channel = this.closeChannel();
      const sent = await coll.allreduce(channel, [...this.sentTo], "sum");
      const expected = sent[this.rank] ?? 0;
      if (this.received < expected && !this.failureCause) {
        await new Promise<void>((resolve, reject) => {
          this.drain = { expected, resolve };
          this.onFailure(reject);
        });
      }
      // Once every rank has everything sent to it, nothing this rank sent is still queued in its sockets: it
      // exits at once, instead of lingering while ZeroMQ delivers what a slower peer (encrypting, or busy) has
      // not taken yet.
      await coll.barrier(channel);
    } finally {
      await transport.close();
    }
  }

  private closeChannel(): CollectiveChannel {
    let seq = 0;
    const m = this.matcher(CLOSE_CONTEXT);
    return {
      rank: this.rank,
      size: this.size,
      nextSequence: () => seq++,
      send: (dest, tag, data, call) => {
        try {
          const bytes = encodeMessage(this.rank, CLOSE_CONTEXT, tag, data, call);
          return this.hand(dest, bytes, false, call) ?? Promise.resolve();
        } catch (e) {
          return Promise.reject(e);
        }
      },
      recv: async (source, tag, signal, call) => (await m.receive(source, tag, signal, call)).data,
    };
  }
}
