import { ClosedError, InvalidArgumentError, type RankFailedError } from "../errors.ts";
import { checkRank, checkTag } from "./arguments.ts";
import { encodeMessage, type ValueName } from "./codec.ts";
import { collectiveChannel } from "./channel.ts";
import type { CollectiveChannel, CollectiveOptions } from "./collectives.ts";
import * as coll from "./collectives.ts";
import type { JobEnv } from "./env.ts";
import { ANY, type Message, type RecvOptions } from "./matcher.ts";
import type { ReduceOp } from "./ops.ts";
import { CONTEXT, SUB_CONTEXTS, WORLD_CONTEXTS } from "./contexts.ts";
import type { Departures } from "./departures.ts";
import { type ContextListener, Router } from "./router.ts";
import { askShrink, survivorScope } from "./shrink.ts";
import { runSplit, type SubScope } from "./split.ts";
import type { Transport } from "./transport.ts";
import { hasLauncher } from "../control/report.ts";

/** What `send` returns when the message is queued without back-pressure (one shared, already resolved). */
const RESOLVED: Promise<void> = Promise.resolve();

/**
 * A communicator: the ranks of the job (the world, from `connect()`) or a group of them (from `split`), this
 * process's rank among them, point-to-point messages and collectives between them. The app's handle is World
 * (lib/world.ts), this class with pools and loops over the same ranks: messaging imports nothing from them.
 *
 * Concurrency rules:
 * - Any number of `recv`s may wait at once. A message goes to the earliest-posted receive it matches;
 *   two receives that both match the same message do not both get it.
 * - Messages from one sender that match one receive arrive in the order they were sent.
 * - Collectives must be called in the same order on every rank of the communicator; at most one collective at
 *   a time per rank and communicator. Communicators are independent: collectives on two communicators may run
 *   at the same time, except `split`, of which a process runs one at a time (on any communicator).
 * - Messages of different communicators never match each other: each has its own message contexts, agreed
 *   collectively by `split`. Ranks, as `source`, `dest` or `root`, are ranks in the communicator called.
 * - `close()` on the world is collective, like MPI_Finalize: it rejects every pending `recv` (of every
 *   communicator) with ClosedError at once and resolves once what this rank sent is handed to ZeroMQ; the
 *   process then stays up until every rank has closed and every message sent to this rank has arrived, and
 *   only then closes its sockets and exits. So no rank exits while a message to it is still on the way (its
 *   sender would otherwise keep trying to deliver it for LINGER_MS), whatever the app or a pool sent last; and
 *   a rank that fails inside `await using` or a `finally` still exits with its error, since `close()` does not
 *   wait for the others. `close()` on a communicator from `split` is local: it only ends that communicator here
 *   (its pending and later calls reject with ClosedError).
 * - If this rank's receive loop fails (a frame that does not decode, a socket error), the world and every
 *   communicator split from it are failed: every pending `recv` and collective rejects at once with
 *   RankFailedError naming the call and the cause, and so does every later `send`, `recv` and collective
 *   (`tryRecv` still takes what arrived before). The rank cannot finish the job: `close()` then only closes the
 *   sockets, and a process that ends with status 0 anyway exits with status 1 and a message saying why, so the
 *   launcher brings the job down.
 * - A rank's death brings the job down, unless a pool asked the launcher to survive it (`retries`): the
 *   launcher then tells every rank left (lib/control/deaths.ts), all in the same order, and messaging goes on
 *   without the dead rank. Its messages still on their way are dropped. `send` and `sendrecv` to it reject
 *   with RankFailedError (`rank`: its rank in the communicator called; the message names the call and why it
 *   died). In every communicator it was a member of, the receives waiting for it, and those waiting for ANY
 *   source (they could be waiting for it, as in MPI ULFM), reject with RankFailedError; a later receive naming
 *   it takes what it sent before, else rejects at once; later ANY-source receives work as before. Every pending
 *   and later collective of those communicators (`split` included) rejects with RankFailedError: like an
 *   MPI ULFM communicator, one that lost a rank can run no more collectives (point-to-point still works);
 *   `shrink()` makes a communicator of the survivors that can.
 *   Communicators without it are unaffected. The world's `close()` is then collective over the ranks alive,
 *   and still ends if a rank dies while it runs.
 */
export class Communicator implements AsyncDisposable {
  /** This process's rank in this communicator, 0..size-1. */
  readonly rank: number;
  /** The number of ranks in this communicator. */
  readonly size: number;
  /** The job's environment as the launcher described it (pool spec, transport; world rank and size). */
  readonly env: JobEnv;
  private readonly router: Router;
  /** The router's record of the ranks gone (departures.ts), kept here too: every send asks it. */
  private readonly departures: Departures;
  /** The world rank of each rank here; undefined for the world itself (where they are the same). */
  private readonly members: readonly number[] | undefined;
  private readonly userContext: number;
  private readonly collectiveContext: number;
  /** The next context a pool gets, and the end of this communicator's block. */
  private nextContext: number;
  private readonly endContext: number;
  private readonly channel: CollectiveChannel;
  /** `close()` was called on this communicator from `split` (the world's close is the router's). */
  private ownClosed = false;

  /** @internal use `connect()` (and `split` for a sub-communicator) */
  constructor(env: JobEnv, scope?: SubScope) {
    this.env = env;
    this.router = scope ? scope.router : new Router(env.rank, env.size);
    this.members = scope?.members;
    this.rank = scope ? scope.rank : env.rank;
    this.size = scope ? scope.members.length : env.size;
    const base = scope ? scope.base : 0;
    this.endContext = scope ? base + SUB_CONTEXTS : WORLD_CONTEXTS;
    scope?.router.addCommunicator(base, scope.members);
    this.departures = this.router.departures;
    this.userContext = base + CONTEXT.user;
    this.collectiveContext = base + CONTEXT.collective;
    this.nextContext = base + CONTEXT.firstFree;
    this.channel = collectiveChannel(this, this.router, this.collectiveContext, !this.members);
  }

  /** @internal The world rank of rank `rank` of this communicator (the launcher names ranks by it). */
  worldRankOf(rank: number): number {
    return this.members ? (this.members[rank] as number) : rank;
  }

  /**
   * @internal Marks this process busy (a pool run) for the idle watch (Router.hold), `waits` saying what waits
   * (`run 2 of pool1`) while only a message can wake it; returns the release.
   */
  hold(waits?: () => string | undefined): () => void {
    return this.router.hold(waits);
  }

  /**
   * @internal True when a message this rank sent leaves only once its event loop turns (Transport `held`): a
   * pool yields before a stretch of synchronous tasks that may be long.
   */
  get sendsHeld(): boolean {
    return this.router.sendsHeld;
  }

  /** @internal */
  attach(transport: Transport): void {
    this.router.attach(transport);
  }

  /** @internal called by the transport for every received frame, or (with `body`) a message sent split. */
  get onFrame(): (frame: Buffer, body?: Buffer) => void {
    return this.router.onFrame;
  }

  /** @internal throws ClosedError once the communicator is closed, RankFailedError once it has failed. */
  checkOpen(call: string): void {
    if (this.router.isClosed) throw new ClosedError(`${call}: the world is closed`);
    if (this.ownClosed) throw new ClosedError(`${call}: the communicator is closed`);
    if (this.router.failed) throw this.router.failedError(call);
  }

  /**
   * @internal This rank's receive loop failed with `cause` (the transport calls it; so does a message to this
   * rank itself that does not decode): rejects every pending receive and collective, of every communicator,
   * with RankFailedError naming the call and `cause`, makes later calls reject too (see the class comment),
   * and calls every `onFailure` listener. Sending stays possible for pools (to tell the other ranks). Only the
   * first call counts.
   */
  fail(cause: Error): void {
    this.router.fail(cause);
  }

  /**
   * @internal Calls `listener` once when this process's messaging fails (`fail`), at once if it has already
   * failed. Returns a function that removes the listener.
   */
  onFailure(listener: (error: RankFailedError) => void): () => void {
    return this.router.onFailure(listener);
  }

  /** @internal The error of a failed world (see `fail`); undefined while it works. */
  get failure(): RankFailedError | undefined {
    return this.router.failure;
  }

  /**
   * The collective channel, for collective `call`: checkOpen, then RankFailedError once a rank of this
   * communicator died: it can run no more collectives.
   */
  private channelFor(call: string): CollectiveChannel {
    this.checkOpen(call);
    const dead = this.departures.brokenBy(this.members);
    if (dead !== undefined) throw this.departures.deadError(dead, this.rankOf(dead), call, true);
    return this.channel;
  }

  /** This communicator's rank of world rank `r`; -1 if it is not a member. */
  private rankOf(r: number): number {
    return this.members ? this.members.indexOf(r) : r;
  }

  /**
   * @internal World rank `rank` died, `why` says how (connect() wires the launcher's death notices here,
   * lib/control/deaths.ts): see the class comment. Ranks are world ranks, on whichever communicator it is
   * called. Idempotent per rank.
   */
  peerDied(rank: number, why: string): void {
    this.router.peerDied(rank, why);
  }

  /** @internal World rank `rank` closed its world, having begun `progress` ([context, count] pairs). */
  peerLeft(rank: number, progress: readonly (readonly [number, number])[]): void {
    this.departures.left(rank, progress);
  }

  /**
   * @internal Calls `listener(rank, why)` for every rank of this communicator that dies (its rank here; the
   * deaths of ranks not in it are not told), first, synchronously, for those already known, in the order this
   * process learnt them, which is the same on every rank. Returns a function that removes it.
   */
  onPeerDeath(listener: (rank: number, why: string) => void): () => void {
    return this.departures.onPeerDeath((rank, why) => {
      const here = this.rankOf(rank);
      if (here >= 0) listener(here, why);
    });
  }

  /**
   * @internal Counts what this rank begins in private context `context` (a pool's runs); other ranks learn the
   * count when this one closes its world (`onLeave`).
   */
  trackProgress(context: number, count: () => number): void {
    this.departures.trackProgress(context, count);
  }

  /**
   * @internal Calls `listener(rank, progress)` for every rank of this communicator (its rank here) that closed its
   * world, with its counters by context (`trackProgress`) as it closed; first for those already known. Returns
   * a function that removes it.
   */
  onLeave(listener: (rank: number, progress: ReadonlyMap<number, number>) => void): () => void {
    return this.departures.onLeave((rank, progress) => {
      const here = this.rankOf(rank);
      if (here >= 0) listener(here, progress);
    });
  }

  /**
   * The ranks of this communicator (its ranks) that this process knows died, in the order it learnt it: empty
   * unless the job survives deaths (a pool with `retries`; docs/survival.md). Every rank learns the deaths in the
   * same order, but not at the same moment. A rank listed is gone for good (the launcher announces a death once
   * the process has exited or been sent SIGKILL); one not listed may have died since. So a task for one live
   * rank, such as printing the result, goes to the lowest rank not listed, and the others wait for a message
   * from it, which rejects with RankFailedError if it dies first: then they look again.
   */
  get deadRanks(): readonly number[] {
    return this.departures.deadRanks.map((r) => this.rankOf(r)).filter((r) => r >= 0);
  }

  /**
   * @internal send in a given context; validation of dest is the caller's. Rejects with RankFailedError if
   * `dest` died.
   */
  sendIn(context: number, dest: number, tag: number, data: unknown, call: string, name?: ValueName): Promise<void> {
    try {
      this.checkAlive(dest, call, context === this.collectiveContext);
      const bytes = encodeMessage(this.rank, context, tag, data, call, name);
      return this.router.hand(this.worldRankOf(dest), bytes, true, call) ?? RESOLVED;
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Throws RankFailedError naming `call` if rank `dest` of this communicator died. */
  private checkAlive(dest: number, call: string, collective = false): void {
    const w = this.worldRankOf(dest);
    if (this.departures.isDead(w)) throw this.departures.deadError(w, dest, call, collective);
  }

  /**
   * Sends `data` to rank `dest` with `tag`. Resolves once the message is handed to the transport: `data` was
   * encoded when `send` was called, so it may be changed right away. Resolves later only to apply
   * back-pressure when several MiB are already queued for `dest`. Rejects with EncodeError, sending nothing,
   * if `data` holds a function or a symbol, or is circular (the message names the path to it).
   */
  send(dest: number, tag: number, data: unknown): Promise<void> {
    // Not `async`: on the hot path that would add a promise and several microtask turns per message.
    try {
      this.checkOpen("send");
      checkRank("send", "dest", dest, false, this.size);
      checkTag("send", "tag", tag, false);
      this.router.notePointToPoint(this.worldRankOf(dest));
      return this.sendIn(this.userContext, dest, tag, data, "send");
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
      checkRank("recv", "source", source, true, this.size);
      checkTag("recv", "tag", tag, true);
      return this.router.matcher(this.userContext).receive(source, tag, opts.signal, "recv") as Promise<Message<T>>;
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Sends `data` to `dest` with `sendTag` and receives a message matching `opts` (as `recv`), at once, like
   * MPI_Sendrecv: two ranks that exchange with `sendrecv` never deadlock, whatever the order. The message is
   * queued before the receive is posted, and the receive is posted before anything is awaited. Resolves to the
   * message received once both are done. Bad arguments or data that cannot be sent reject before either
   * happens.
   */
  sendrecv<T = unknown>(dest: number, sendTag: number, data: unknown, opts: RecvOptions = {}): Promise<Message<T>> {
    try {
      this.checkOpen("sendrecv");
      checkRank("sendrecv", "dest", dest, false, this.size);
      checkTag("sendrecv", "sendTag", sendTag, false);
      const source = opts.source ?? ANY;
      const tag = opts.tag ?? ANY;
      checkRank("sendrecv", "source", source, true, this.size);
      checkTag("sendrecv", "tag", tag, true);
      this.checkAlive(dest, "sendrecv");
      const bytes = encodeMessage(this.rank, this.userContext, sendTag, data, "sendrecv");
      this.router.notePointToPoint(this.worldRankOf(dest));
      const sent = this.router.hand(this.worldRankOf(dest), bytes, true, "sendrecv") ?? RESOLVED;
      const received = this.router.matcher(this.userContext).receive(source, tag, opts.signal, "sendrecv");
      return Promise.all([sent, received]).then(([, m]) => m as Message<T>);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Takes a matching message that has already arrived, without waiting; undefined if there is none. */
  tryRecv<T = unknown>(opts: Omit<RecvOptions, "signal"> = {}): Message<T> | undefined {
    const source = opts.source ?? ANY;
    const tag = opts.tag ?? ANY;
    checkRank("tryRecv", "source", source, true, this.size);
    checkTag("tryRecv", "tag", tag, true);
    return this.router.matcher(this.userContext).take(source, tag) as Message<T> | undefined;
  }

  /** Number of point-to-point messages that have arrived and wait for a receive. */
  get queued(): number {
    return this.router.matcher(this.userContext).size;
  }

  /** Resolves when every rank has called `barrier`. */
  async barrier(opts?: CollectiveOptions): Promise<void> {
    return coll.barrier(this.channelFor("barrier"), opts);
  }

  /** Every rank gets `value` as given on `root` (the other ranks' `value` is ignored). */
  async bcast<T>(value: T, root = 0, opts?: CollectiveOptions): Promise<T> {
    return coll.bcast(this.channelFor("bcast"), value, root, opts);
  }

  /** Combines every rank's value with `op` in rank order; the result on `root`, undefined elsewhere. */
  async reduce<T>(value: T, op: ReduceOp<T>, root = 0, opts?: CollectiveOptions): Promise<T | undefined> {
    return coll.reduce(this.channelFor("reduce"), value, op, root, opts);
  }

  /** Like `reduce`, with the result on every rank. */
  async allreduce<T>(value: T, op: ReduceOp<T>, opts?: CollectiveOptions): Promise<T> {
    return coll.allreduce(this.channelFor("allreduce"), value, op, opts);
  }

  /** Every rank's value, indexed by rank, on `root`; undefined elsewhere. */
  async gather<T>(value: T, root = 0, opts?: CollectiveOptions): Promise<T[] | undefined> {
    return coll.gather(this.channelFor("gather"), value, root, opts);
  }

  /** Every rank's value, indexed by rank, on every rank. */
  async allgather<T>(value: T, opts?: CollectiveOptions): Promise<T[]> {
    return coll.allgather(this.channelFor("allgather"), value, opts);
  }

  /** Rank r gets `values[r]` from `root` (`values` is read on the root only). */
  async scatter<T>(values: readonly T[] | undefined, root = 0, opts?: CollectiveOptions): Promise<T> {
    return coll.scatter(this.channelFor("scatter"), values, root, opts);
  }

  /**
   * Every rank gives one value per rank: `values[i]` goes to rank i. Resolves to what every rank gave this one,
   * indexed by source rank (`result[rank]` is this rank's own `values[rank]`), like MPI_Alltoall.
   */
  async alltoall<T>(values: readonly T[], opts?: CollectiveOptions): Promise<T[]> {
    return coll.alltoall(this.channelFor("alltoall"), values, opts);
  }

  /** Inclusive prefix, like MPI_Scan: rank r gets the values of ranks 0..r combined with `op` in rank order. */
  async scan<T>(value: T, op: ReduceOp<T>, opts?: CollectiveOptions): Promise<T> {
    return coll.scan(this.channelFor("scan"), value, op, opts);
  }

  /**
   * Exclusive prefix, like MPI_Exscan: rank r gets the values of ranks 0..r-1 combined with `op` in rank
   * order; rank 0 gets undefined.
   */
  async exscan<T>(value: T, op: ReduceOp<T>, opts?: CollectiveOptions): Promise<T | undefined> {
    return coll.exscan(this.channelFor("exscan"), value, op, opts);
  }

  /**
   * Like MPI_Reduce_scatter_block: every rank gives one value per rank; rank i gets `values[i]` of every rank
   * combined with `op` in rank order. A value may itself be an array or typed array (a block), combined
   * element-wise by the built-in ops.
   */
  async reduceScatter<T>(values: readonly T[], op: ReduceOp<T>, opts?: CollectiveOptions): Promise<T> {
    return coll.reduceScatter(this.channelFor("reduceScatter"), values, op, opts);
  }

  /**
   * Collective, like MPI_Comm_split: the ranks that give the same `color` form a new communicator, ranked by
   * `key`, ties broken by their rank here. Resolves to it, or to undefined on a rank whose color is undefined
   * (MPI_UNDEFINED). `color` is undefined or an integer in 0..2^31-1; `key` any safe integer (default 0, so the
   * order here is kept).
   *
   * The new communicator is a World of its own: its own rank and size, point-to-point messages (ranks are its
   * ranks), every collective, `split`, and pools, which run on its ranks only. Its messages never match another
   * communicator's. A process runs one split at a time (on any communicator); another one started meanwhile
   * rejects with InvalidArgumentError.
   */
  async split(color: number | undefined, key = 0, opts?: CollectiveOptions): Promise<this | undefined> {
    return runSplit(this.router, this.channelFor("split"), this.rank, this.members, color, key, opts, (scope) =>
      this.sameKind(scope),
    );
  }

  /** A communicator of this one's class in `scope`: a World's split (or shrink) is a World, with pools and loops. */
  private sameKind(scope: SubScope): this {
    const Same = this.constructor as new (env: JobEnv, scope: SubScope) => this;
    return new Same(this.env, scope);
  }

  /**
   * Collective over the ranks alive, like MPI ULFM's MPI_Comm_shrink: resolves to a new communicator of the
   * world's ranks that are not dead, ranked in their world order, on which collectives, `split` and new pools work
   * again after a death (the world's own collectives reject for good once it lost a rank). Every survivor must
   * call it, and every survivor gets a communicator of the same ranks, whatever deaths it had heard of when it
   * called: the launcher answers once every rank still alive has asked, with the deaths so far, so a rank that
   * dies while others wait is left out of the wait (it may still be a member, if it died after the answer: a
   * communicator that has lost a rank again, to shrink again). It is also a barrier of the survivors. Only the
   * world shrinks (a communicator from `split` rejects with InvalidArgumentError). Without `workpool launch`
   * (alone, under mpirun or srun) no death is ever survived, so it is a `split` of every rank.
   *
   * Pools of the world keep working after a death they survive (`retries`); the shrunk communicator is for the
   * app's own collectives, and for pools made after the death.
   */
  async shrink(): Promise<this> {
    this.checkOpen("shrink");
    if (this.members) {
      throw new InvalidArgumentError("shrink: only the world shrinks; call it on the world from connect()");
    }
    if (!hasLauncher()) return (await this.split(0, this.rank)) as this;
    const answer = await askShrink(this.router);
    this.checkOpen("shrink");
    return this.sameKind(survivorScope(this.router, answer, this.size, this.rank));
  }

  /** @internal How many contexts `allocateContext` has handed out (pools made on this communicator). */
  get allocatedContexts(): number {
    return this.nextContext - this.userContext - CONTEXT.firstFree + CONTEXT.user;
  }

  /**
   * @internal Allocates a private message context from this communicator's block. Every rank must allocate
   * contexts in the same order (pools do so in creation order), so the same number names the same pool
   * everywhere.
   */
  allocateContext(): number {
    if (this.nextContext >= this.endContext) {
      const most = this.endContext - this.userContext - CONTEXT.firstFree;
      throw new InvalidArgumentError(`pool: this communicator has made ${most} pools, the most it can`);
    }
    return this.nextContext++;
  }

  /** @internal Routes every message of `context` to `listener`, first the ones already queued. */
  listen(context: number, listener: ContextListener | undefined): void {
    this.router.listen(context, listener);
  }

  /** True once `close()` was called (on this communicator, or on the world). */
  get isClosed(): boolean {
    return this.ownClosed || this.router.isClosed;
  }

  /** @internal send in a private context (pools); no argument checks. One for a rank that died is dropped. */
  post(context: number, dest: number, tag: number, data: unknown): Promise<void> {
    if (this.departures.isDead(this.worldRankOf(dest))) return RESOLVED;
    return this.sendIn(context, dest, tag, data, "pool", "data");
  }

  /** @internal encodes a message of this rank for `postEncoded` (pools count and may delay it). */
  encode(context: number, tag: number, data: unknown, name?: ValueName): Buffer {
    return encodeMessage(this.rank, context, tag, data, "pool", name);
  }

  /**
   * @internal sends a message made by `encode`; one for another rank after close (a pool's late one), or for a
   * rank that died, is dropped.
   */
  postEncoded(dest: number, bytes: Buffer): void {
    this.router.handLate(this.worldRankOf(dest), bytes);
  }

  /**
   * On the world, collective (every rank must call it, like MPI_Finalize): rejects pending receives, of every
   * communicator, at once and resolves once what this rank sent is handed to ZeroMQ. In the background it then
   * waits until every rank has closed and every message sent here has arrived, and closes the sockets, which
   * lets the process exit. On a communicator from `split`, local: rejects its pending receives and collectives
   * and ends it on this rank, at once. Idempotent.
   */
  close(): Promise<void> {
    if (!this.members) return this.router.close();
    if (!this.ownClosed) {
      this.ownClosed = true;
      const reason = "the communicator was closed";
      this.router.matcher(this.userContext).close(reason);
      this.router.matcher(this.collectiveContext).close(reason);
    }
    return RESOLVED;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
