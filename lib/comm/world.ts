import { hostname } from "node:os";
import { ClosedError, describe, InvalidArgumentError, RankFailedError } from "../errors.ts";
import { decodeFrame, decodeSplit, encodeMessage } from "./codec.ts";
import type { CollectiveChannel, CollectiveOptions } from "./collectives.ts";
import * as coll from "./collectives.ts";
import { ENV, type JobEnv, readJobEnv } from "./env.ts";
import { ANY, Matcher, type Message } from "./matcher.ts";
import type { ReduceOp } from "./ops.ts";
import { joinRendezvous } from "./rendezvous.ts";
import { Transport } from "./transport.ts";

/** Message contexts: like MPI communicator contexts, traffic in one never matches receives in another. */
export const CONTEXT = { user: 0, collective: 1, firstFree: 2 } as const;
/** The context of `close`'s own collective (the largest u32, never allocated to a pool). */
const CLOSE_CONTEXT = 2 ** 32 - 1;

export interface RecvOptions {
  /** Rank to receive from, or ANY. @default ANY */
  readonly source?: number;
  /** Tag to receive, or ANY. @default ANY */
  readonly tag?: number;
  /** Abort the wait: the promise rejects with AbortError and no message is consumed. */
  readonly signal?: AbortSignal;
}

/** Handler that takes every message of one context as it arrives (used by pools). */
export type ContextListener = (source: number, tag: number, data: unknown) => void;

const MAX_TAG = 2 ** 31 - 1;
/** What `send` returns when the message is queued without back-pressure (one shared, already resolved). */
const RESOLVED: Promise<void> = Promise.resolve();

/**
 * One rank's view of the job: its rank, the job size, point-to-point messages and collectives.
 *
 * Concurrency rules:
 * - Any number of `recv`s may wait at once. A message goes to the earliest-posted receive it matches;
 *   two receives that both match the same message do not both get it.
 * - Messages from one sender that match one receive arrive in the order they were sent.
 * - Collectives must be called in the same order on every rank; at most one collective at a time per rank.
 * - `close()` is collective, like MPI_Finalize: it rejects every pending `recv` with ClosedError at once and
 *   resolves once what this rank sent is handed to ZeroMQ; the process then stays up until every rank has
 *   closed and every message sent to this rank has arrived, and only then closes its sockets and exits. So no
 *   rank exits while a message to it is still on the way (its sender would otherwise keep trying to deliver it
 *   for LINGER_MS), whatever the app or a pool sent last; and a rank that fails inside `await using` or a
 *   `finally` still exits with its error, since `close()` does not wait for the others.
 * - If this rank's receive loop fails (a frame that does not decode, a socket error), the world is failed:
 *   every pending `recv` and collective rejects at once with RankFailedError naming the call and the cause,
 *   and so does every later `send`, `recv` and collective (`tryRecv` still takes what arrived before). The
 *   rank cannot finish the job: `close()` then only closes the sockets, and a process that ends with status 0
 *   anyway exits with status 1 and a message saying why, so the launcher brings the job down.
 */
export class World implements AsyncDisposable {
  readonly rank: number;
  readonly size: number;
  /** The job's environment as the launcher described it (pool spec, transport). */
  readonly env: JobEnv;
  private transport: Transport | undefined;
  private readonly matchers = new Map<number, Matcher>();
  private readonly listeners = new Map<number, ContextListener>();
  private nextContext: number = CONTEXT.firstFree;
  private collSeq = 0;
  private closed = false;
  private closing: Promise<void> | undefined;
  private readonly channel: CollectiveChannel;
  /** Messages sent to each other rank, and received from other ranks (`close`'s own excepted). */
  private readonly sentTo: number[];
  private received = 0;
  /** While `close` waits for messages still on their way here: how many in all, and what to wake. */
  private drain: { readonly expected: number; readonly resolve: () => void } | undefined;
  /** Why this rank's receive loop failed (see `fail`); undefined while it works. */
  private failureCause: Error | undefined;
  private readonly failureListeners = new Set<(error: RankFailedError) => void>();

  /** @internal use `connect()` */
  constructor(env: JobEnv) {
    this.env = env;
    this.rank = env.rank;
    this.size = env.size;
    this.channel = this.channelIn(CONTEXT.collective);
    this.sentTo = new Array<number>(env.size).fill(0);
  }

  private channelIn(context: number): CollectiveChannel {
    let seq = 0;
    return {
      rank: this.rank,
      size: this.size,
      nextSequence: context === CONTEXT.collective ? () => this.collSeq++ : () => seq++,
      send: (dest, tag, data, call) => this.sendIn(context, dest, tag, data, call),
      recv: async (source, tag, signal, call) => (await this.matcher(context).receive(source, tag, signal, call)).data,
    };
  }

  /** @internal */
  attach(transport: Transport): void {
    this.transport = transport;
  }

  /** @internal called by the transport for every received frame, or (with `body`) a message sent split. */
  onFrame = (frame: Buffer, body?: Buffer): void => {
    // A frame that does not decode, or a listener that throws, throws out of here: the transport's receive
    // loop then stops and calls `fail`.
    if (body) decodeSplit(frame, body, this.onMessage);
    else decodeFrame(frame, this.onMessage);
  };

  /** One callback for every frame: no closure to create (and, under tsx, to name) per frame. */
  private readonly onMessage = (source: number, context: number, tag: number, data: unknown): void =>
    this.dispatch(source, context, tag, data);

  private dispatch(source: number, context: number, tag: number, data: unknown): void {
    if (source !== this.rank && context !== CLOSE_CONTEXT) {
      this.received++;
      if (this.drain && this.received >= this.drain.expected) this.drain.resolve();
    }
    const listener = this.listeners.get(context);
    if (listener) listener(source, tag, data);
    else this.matcher(context).deliver(source, tag, data);
  }

  private matcher(context: number): Matcher {
    let m = this.matchers.get(context);
    if (!m) {
      m = new Matcher();
      if (this.failureCause) m.fail(this.failedError);
      this.matchers.set(context, m);
    }
    return m;
  }

  /** @internal throws ClosedError once the world is closed, RankFailedError once it has failed. */
  checkOpen(call: string): void {
    if (this.closed) throw new ClosedError(`${call}: the world is closed`);
    if (this.failureCause) throw this.failedError(call);
  }

  /** The error a call (or, without `call`, a pool) gets from a failed world. */
  private readonly failedError = (call?: string): RankFailedError => {
    const cause = this.failureCause as Error;
    const what = `rank ${this.rank} failed, it can no longer receive: ${cause.message}`;
    return new RankFailedError(this.rank, call ? `${call}: ${what}` : what, { cause });
  };

  /**
   * @internal This rank's receive loop failed with `cause` (the transport calls it; so does a message to this
   * rank itself that does not decode): rejects every pending receive and collective with RankFailedError
   * naming the call and `cause`, makes later calls reject too (see the class comment), and calls every
   * `onFailure` listener. Sending stays possible for pools (to tell the other ranks). Only the first call counts.
   */
  fail(cause: Error): void {
    if (this.failureCause) return;
    this.failureCause = cause;
    for (const m of this.matchers.values()) m.fail(this.failedError);
    const error = this.failedError();
    for (const listener of [...this.failureListeners]) listener(error);
    this.failureListeners.clear();
  }

  /**
   * @internal Calls `listener` once when this world fails (`fail`), at once if it has already failed. Returns a
   * function that removes the listener.
   */
  onFailure(listener: (error: RankFailedError) => void): () => void {
    if (this.failureCause) {
      listener(this.failedError());
      return () => {};
    }
    this.failureListeners.add(listener);
    return () => this.failureListeners.delete(listener);
  }

  /** @internal The error of a failed world (see `fail`); undefined while it works. */
  get failure(): RankFailedError | undefined {
    return this.failureCause ? this.failedError() : undefined;
  }

  private checkRank(call: string, what: string, r: unknown, allowAny: boolean): void {
    if (allowAny && r === ANY) return;
    if (typeof r !== "number" || !Number.isInteger(r) || r < 0 || r >= this.size) {
      throw new InvalidArgumentError(
        `${call}: ${what} must be an integer rank in 0..${this.size - 1}${allowAny ? " or ANY" : ""}; got ${describe(r)}`,
      );
    }
  }

  private checkTag(call: string, t: unknown, allowAny: boolean): void {
    if (allowAny && t === ANY) return;
    if (typeof t !== "number" || !Number.isInteger(t) || t < 0 || t > MAX_TAG) {
      throw new InvalidArgumentError(
        `${call}: tag must be an integer in 0..${MAX_TAG}${allowAny ? " or ANY" : ""}; got ${describe(t)}`,
      );
    }
  }

  /** @internal send in a given context; validation of dest is the caller's. */
  sendIn(context: number, dest: number, tag: number, data: unknown, call: string): Promise<void> {
    const bytes = encodeMessage(this.rank, context, tag, data, call);
    try {
      return this.hand(dest, bytes, context !== CLOSE_CONTEXT, call) ?? RESOLVED;
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * The one way out for an encoded message: to this rank in a microtask, else to the transport, counted for
   * `close` (unless it is close's own). Returns the transport's back-pressure promise, if any. After close()
   * counted what was sent, nothing else may leave (a collective still running, say): ClosedError.
   */
  private hand(dest: number, bytes: Buffer, counted: boolean, call: string): Promise<void> | undefined {
    if (dest === this.rank) {
      queueMicrotask(() => {
        try {
          this.onFrame(bytes);
        } catch (e) {
          this.fail(e as Error);
        }
      });
      return undefined;
    }
    const t = this.transport;
    if (!t) throw new ClosedError(`${call}: no transport`);
    if (counted) {
      if (this.closed) throw new ClosedError(`${call}: the world is closed`);
      this.sentTo[dest]!++;
    }
    return t.enqueue(dest, bytes);
  }

  /**
   * Sends `data` to rank `dest` with `tag`. Resolves once the message is handed to the transport: `data` was
   * encoded when `send` was called, so it may be changed right away. Resolves later only to apply
   * back-pressure when several MiB are already queued for `dest`.
   */
  send(dest: number, tag: number, data: unknown): Promise<void> {
    // Not `async`: on the hot path that would add a promise and several microtask turns per message.
    try {
      this.checkOpen("send");
      this.checkRank("send", "dest", dest, false);
      this.checkTag("send", tag, false);
      return this.sendIn(CONTEXT.user, dest, tag, data, "send");
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Receives the earliest message matching `source` and `tag` (either may be ANY, the default). */
  recv<T = unknown>(opts: RecvOptions = {}): Promise<Message<T>> {
    // Not `async`, like `send`.
    try {
      this.checkOpen("recv");
      const source = opts.source ?? ANY;
      const tag = opts.tag ?? ANY;
      this.checkRank("recv", "source", source, true);
      this.checkTag("recv", tag, true);
      return this.matcher(CONTEXT.user).receive(source, tag, opts.signal, "recv") as Promise<Message<T>>;
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Takes a matching message that has already arrived, without waiting; undefined if there is none. */
  tryRecv<T = unknown>(opts: Omit<RecvOptions, "signal"> = {}): Message<T> | undefined {
    const source = opts.source ?? ANY;
    const tag = opts.tag ?? ANY;
    this.checkRank("tryRecv", "source", source, true);
    this.checkTag("tryRecv", tag, true);
    return this.matcher(CONTEXT.user).take(source, tag) as Message<T> | undefined;
  }

  /** Number of point-to-point messages that have arrived and wait for a receive. */
  get queued(): number {
    return this.matcher(CONTEXT.user).size;
  }

  /** Resolves when every rank has called `barrier`. */
  async barrier(opts?: CollectiveOptions): Promise<void> {
    this.checkOpen("barrier");
    return coll.barrier(this.channel, opts);
  }

  /** Every rank gets `value` as given on `root` (the other ranks' `value` is ignored). */
  async bcast<T>(value: T, root = 0, opts?: CollectiveOptions): Promise<T> {
    this.checkOpen("bcast");
    return coll.bcast(this.channel, value, root, opts);
  }

  /** Combines every rank's value with `op` in rank order; the result on `root`, undefined elsewhere. */
  async reduce<T>(value: T, op: ReduceOp<T>, root = 0, opts?: CollectiveOptions): Promise<T | undefined> {
    this.checkOpen("reduce");
    return coll.reduce(this.channel, value, op, root, opts);
  }

  /** Like `reduce`, with the result on every rank. */
  async allreduce<T>(value: T, op: ReduceOp<T>, opts?: CollectiveOptions): Promise<T> {
    this.checkOpen("allreduce");
    return coll.allreduce(this.channel, value, op, opts);
  }

  /** Every rank's value, indexed by rank, on `root`; undefined elsewhere. */
  async gather<T>(value: T, root = 0, opts?: CollectiveOptions): Promise<T[] | undefined> {
    this.checkOpen("gather");
    return coll.gather(this.channel, value, root, opts);
  }

  /** Every rank's value, indexed by rank, on every rank. */
  async allgather<T>(value: T, opts?: CollectiveOptions): Promise<T[]> {
    this.checkOpen("allgather");
    return coll.allgather(this.channel, value, opts);
  }

  /** Rank r gets `values[r]` from `root` (`values` is read on the root only). */
  async scatter<T>(values: readonly T[] | undefined, root = 0, opts?: CollectiveOptions): Promise<T> {
    this.checkOpen("scatter");
    return coll.scatter(this.channel, values, root, opts);
  }

  /**
   * @internal Allocates a private message context. Every rank must allocate contexts in the same order
   * (pools do so in creation order), so the same number names the same pool everywhere.
   */
  allocateContext(): number {
    return this.nextContext++;
  }

  /** @internal Routes every message of `context` to `listener`, first the ones already queued. */
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

  /** True once `close()` was called. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** @internal send in a private context (pools); no argument checks. */
  post(context: number, dest: number, tag: number, data: unknown): Promise<void> {
    return this.sendIn(context, dest, tag, data, "pool");
  }

  /** @internal encodes a message of this rank for `postEncoded` (pools count and may delay it). */
  encode(context: number, tag: number, data: unknown): Buffer {
    return encodeMessage(this.rank, context, tag, data, "pool");
  }

  /** @internal sends a message made by `encode`; one for another rank after close (a pool's late one) is dropped. */
  postEncoded(dest: number, bytes: Buffer): void {
    if (dest !== this.rank && (this.closed || !this.transport)) return;
    void this.hand(dest, bytes, true, "pool");
  }

  /**
   * Collective (every rank must call it, like MPI_Finalize): rejects pending receives at once and resolves
   * once what this rank sent is handed to ZeroMQ. In the background it then waits until every rank has
   * closed and every message sent here has arrived, and closes the sockets, which lets the process exit.
   * Idempotent.
   */
  close(): Promise<void> {
    if (!this.closing) {
      this.closed = true;
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
      // A failed world cannot take part in close's collective: it only closes its sockets.
      if (this.failureCause) return;
      // What every rank sent to every other, summed: the messages on their way here are the difference.
      const sent = await coll.allreduce(this.channelIn(CLOSE_CONTEXT), [...this.sentTo], "sum");
      const expected = sent[this.rank] ?? 0;
      if (this.received < expected && !this.failureCause) {
        await new Promise<void>((resolve, reject) => {
          this.drain = { expected, resolve };
          this.onFailure(reject);
        });
      }
    } finally {
      await transport.close();
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

let joined: Promise<World> | undefined;

/**
 * Joins the job this process was started in by `workpool launch` (or another launcher that sets the
 * WORKPOOL_* variables). Run without a launcher, it returns a world of size 1. Calling it again returns the
 * same world.
 */
export function connect(): Promise<World> {
  joined ??= join();
  return joined;
}

async function join(): Promise<World> {
  const env = readJobEnv();
  const world = new World(env);
  if (env.size === 1 && !env.rendezvous) return world;
  const address = env.transport === "ipc" ? `ipc://${env.ipcDir}/r${env.rank}` : `tcp://${env.host}:*`;
  const transport = await Transport.bind(address, world.onFrame, (e) => world.fail(e));
  const timeoutMs = Number(process.env[ENV.connectTimeoutMs] ?? 300_000);
  const endpoints = await joinRendezvous(
    env.rendezvous as string,
    { rank: env.rank, endpoint: transport.endpoint, pid: process.pid, host: hostname() },
    timeoutMs,
  );
  transport.setPeers(endpoints);
  world.attach(transport);
  if (env.size > 1) {
    // close() is collective: a rank that ends without it would leave the others waiting there for good, so
    // such an end is a failure, with a message the launcher passes on when it brings the job down.
    process.once("exit", (code) => {
      // (Node passes 0 here for an unsettled top-level await, whose own status 13 is in process.exitCode.)
      if (code !== 0 || (process.exitCode !== undefined && process.exitCode !== 0)) return;
      const failure = world.failure;
      if (failure) {
        // The app caught the failure and ended normally: the others would wait for this rank for good.
        process.stderr.write(`workpool: ${failure.message}\n`);
        process.exitCode = 1;
        return;
      }
      if (world.isClosed) return;
      process.stderr.write(
        `workpool: rank ${env.rank} exited without calling world.close(); every rank must call it (it is ` +
          "collective, like MPI_Finalize: the others wait there for this rank)\n",
      );
      process.exitCode = 1;
    });
  }
  return world;
}
