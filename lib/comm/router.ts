import { ENV, envMs } from "./env.ts";
import { ClosedError, RankFailedError } from "../errors.ts";
import { decodeFrame, decodeSplit, encodeMessage } from "./codec.ts";
import type { CollectiveChannel } from "./collectives.ts";
import * as coll from "./collectives.ts";
import { ANY, Matcher } from "./matcher.ts";
import type { Transport } from "./transport.ts";
import { appZmqWaiting } from "./zmq-activity.ts";
import { report } from "../control/report.ts";

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

/** Tags of close's exchange once a rank died (see Router#closeAmongLive): far above its collectives' sequence. */
const CLOSE_TAG = { count: 2 ** 31, drained: 2 ** 31 + 1 } as const;

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
  /** Of `received`, those from each world rank; the rest are `unplaced`'s. */
  private readonly receivedFrom: number[];
  /**
   * Messages received in the block of a communicator not made here yet (its split still runs here while a
   * faster member already sends in it), by block and sender (its rank there): placed in `receivedFrom` once
   * the communicator is made (`addCommunicator`).
   */
  private readonly unplaced = new Map<number, Map<number, number>>();
  /** The members (world ranks) of each communicator from `split` on this process, by block. */
  private readonly blocks = new Map<number, readonly number[]>();
  /** Ranks that died, in the order this process learnt it, with why (see `peerDied`). */
  private readonly dead = new Map<number, string>();
  private readonly deathListeners = new Set<(rank: number, why: string) => void>();
  /** Counters of what this rank has begun in a context (a pool's runs), sent to every rank when it closes. */
  private readonly progress = new Map<number, () => number>();
  /** Ranks that closed their world, with their counters (`progress`) as they closed. */
  private readonly leavers = new Map<number, ReadonlyMap<number, number>>();
  private readonly leaveListeners = new Set<(rank: number, progress: ReadonlyMap<number, number>) => void>();
  /** While `close` waits for messages still on their way here: whether they all came, and what to wake. */
  private drain:
    { readonly done: () => boolean; readonly resolve: () => void; readonly reject: (e: Error) => void } | undefined;
  /** `drain` ends (rejects) when a rank dies: close's collective over the whole world cannot finish. */
  private closeShrinks = false;
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
  /** Shrinks this process has asked the launcher for (World#shrink numbers them). */
  shrinks = 0;
  /** A split is running on this process (see split.ts: two at once could be given the same block). */
  splitting = false;
  /** Pool runs (and the like) in progress here: see `hold`. */
  private holds = 0;

  constructor(rank: number, size: number) {
    this.rank = rank;
    this.size = size;
    this.sentTo = new Array<number>(size).fill(0);
    this.receivedFrom = new Array<number>(size).fill(0);
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

  /**
   * One callback for every frame: no closure to create (and, under tsx, to name) per frame. A message from a
   * rank that died (`peerDied`) is dropped: it was on its way when the death was told.
   */
  private readonly onRemote = (source: number, context: number, tag: number, data: unknown): void => {
    const from = this.senderOf(source, context);
    if (from !== undefined && this.dead.size > 0 && this.dead.has(from)) return;
    if (context !== CLOSE_CONTEXT) {
      this.received++;
      if (from !== undefined) this.receivedFrom[from]!++;
      else this.place(source, context);
      if (this.drain?.done()) this.drain.resolve();
    }
    this.dispatch(source, context, tag, data);
  };

  /**
   * The world rank that sent a message of `context` as rank `source` of its communicator; undefined when that
   * communicator is not made here yet.
   */
  private senderOf(source: number, context: number): number | undefined {
    if (context < WORLD_CONTEXTS || context === CLOSE_CONTEXT) return source;
    return this.blocks.get(blockOf(context))?.[source];
  }

  private place(source: number, context: number): void {
    const block = blockOf(context);
    let counts = this.unplaced.get(block);
    if (!counts) this.unplaced.set(block, (counts = new Map()));
    counts.set(source, (counts.get(source) ?? 0) + 1);
  }

  /**
   * A communicator from `split` with block `base` and these members (world ranks, in its rank order) is made
   * on this process: what it received before is placed, and the deaths already known apply to its contexts.
   */
  addCommunicator(base: number, members: readonly number[]): void {
    const block = blockOf(base);
    this.blocks.set(block, members);
    const counts = this.unplaced.get(block);
    if (counts) {
      this.unplaced.delete(block);
      for (const [source, n] of counts) this.receivedFrom[members[source] as number]! += n;
    }
    for (const [context, m] of this.matchers) {
      if (context !== CLOSE_CONTEXT && context >= WORLD_CONTEXTS && blockOf(context) === block) {
        for (const rank of this.dead.keys()) this.applyDeath(context, m, rank);
      }
    }
  }

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
      for (const rank of this.dead.keys()) this.applyDeath(context, m, rank, false);
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
    if (this.dead.has(dest)) throw this.deadError(dest, dest, call);
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

  /**
   * A message a pool encoded; one for another rank after close (a pool's late one), or for a rank that died, is
   * dropped.
   */
  handLate(dest: number, bytes: Buffer): void {
    if (dest !== this.rank && (this.closing || !this.transport || this.dead.has(dest))) return;
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
   * World rank `rank` died (the launcher told this process; lib/control/deaths.ts), `why` says how. From now on
   * its frames still on their way are dropped (neither delivered nor counted by `close`), the transport drops
   * it (`Transport#drop`), sends to it reject with RankFailedError (pools' are dropped: see `handLate`), and in
   * every communicator it is a member of: the receives waiting for it or for ANY source reject with
   * RankFailedError (`rank`: its rank there), and later ones naming it reject at once (Matcher#peerDied); every
   * pending and later collective rejects (`brokenBy`). `close` goes on among the ranks still alive. Then the
   * `onPeerDeath` listeners hear of it. Its own rank, or a rank it already knows dead, is ignored.
   */
  peerDied(rank: number, why: string): void {
    if (rank === this.rank || !Number.isInteger(rank) || rank < 0 || rank >= this.size) return;
    if (this.dead.has(rank)) return;
    this.dead.set(rank, why);
    this.transport?.drop(rank);
    for (const [context, m] of this.matchers) this.applyDeath(context, m, rank);
    const drain = this.drain;
    if (drain) {
      if (this.closeShrinks) drain.reject(this.deadError(rank, rank, "close"));
      else if (drain.done()) drain.resolve();
    }
    for (const listener of [...this.deathListeners]) listener(rank, why);
  }

  /**
   * World rank `rank`'s death applies to the matcher of `context`, if `rank` is in its communicator (one not
   * made here yet is done by `addCommunicator`): a collective context fails for good; close's rejects every
   * pending receive (its collective over the ranks alive starts again); any other rejects the receives that
   * could wait for `rank`. `pending` false: a new matcher, nothing pending.
   */
  private applyDeath(context: number, m: Matcher, rank: number, pending = true): void {
    if (context === CLOSE_CONTEXT) {
      m.peerDied(rank, (call) => this.deadError(rank, rank, call), pending);
      return;
    }
    const members = context < WORLD_CONTEXTS ? undefined : this.blocks.get(blockOf(context));
    if (context >= WORLD_CONTEXTS && !members) return;
    const there = members ? members.indexOf(rank) : rank;
    if (there < 0) return;
    const offset = context < WORLD_CONTEXTS ? context : (context - WORLD_CONTEXTS) % SUB_CONTEXTS;
    const error = (call: string) => this.deadError(rank, there, call, offset === CONTEXT.collective);
    if (offset === CONTEXT.collective) m.fail(error);
    else m.peerDied(there, error);
  }

  /**
   * The RankFailedError a call gets for world rank `rank`, rank `there` of the communicator called, which died;
   * `collective`: the call is a collective, which that death broke.
   */
  deadError(rank: number, there: number, call: string, collective = false): RankFailedError {
    const who = rank === there ? `rank ${rank}` : `rank ${there} (world rank ${rank})`;
    const broken = collective ? "; a communicator that lost a rank can run no more collectives" : "";
    return new RankFailedError(there, `${call}: ${who} died: ${this.dead.get(rank) ?? "unknown"}${broken}`);
  }

  /** True once this process knows world rank `rank` died. */
  isDead(rank: number): boolean {
    return this.dead.has(rank);
  }

  /** The ranks that died, world ranks in the order this process learnt it. */
  get deadRanks(): number[] {
    return [...this.dead.keys()];
  }

  /** The first of `members` (world ranks) that died, if any: a communicator of them can run no collectives. */
  brokenBy(members: readonly number[] | undefined): number | undefined {
    if (this.dead.size === 0) return undefined;
    for (const rank of this.dead.keys()) if (!members || members.includes(rank)) return rank;
    return undefined;
  }

  /**
   * Calls `listener(rank, why)` for every death `peerDied` is told (world ranks), first for those already
   * known, in order. Returns a function that removes it.
   */
  onPeerDeath(listener: (rank: number, why: string) => void): () => void {
    for (const [rank, why] of this.dead) listener(rank, why);
    this.deathListeners.add(listener);
    return () => this.deathListeners.delete(listener);
  }

  /**
   * Counts what this rank begins in `context` (a pool's runs): `count()` is sent to every other rank when this
   * one closes, so that a rank still waiting for this one to begin more of it learns it never will (`onLeave`).
   */
  trackProgress(context: number, count: () => number): void {
    this.progress.set(context, count);
  }

  /**
   * Calls `listener(rank, progress)` for every rank that closed its world (world ranks), with its counters
   * (`trackProgress`: context to count) as it closed; first for those already known. Returns a function that
   * removes it.
   */
  onLeave(listener: (rank: number, progress: ReadonlyMap<number, number>) => void): () => void {
    for (const [rank, progress] of this.leavers) listener(rank, progress);
    this.leaveListeners.add(listener);
    return () => this.leaveListeners.delete(listener);
  }

  /** World rank `rank` closed its world; `data` is its counters, as [context, count] pairs. */
  left(rank: number, data: unknown): void {
    if (rank === this.rank || this.leavers.has(rank) || !Array.isArray(data)) return;
    const progress = new Map<number, number>(data as [number, number][]);
    this.leavers.set(rank, progress);
    for (const listener of [...this.leaveListeners]) listener(rank, progress);
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
      this.tellLeaving();
      this.closing = this.transport?.flush() ?? Promise.resolve();
      this.finish().catch((e: unknown) => {
        process.emitWarning(`workpool rank ${this.rank}: close failed: ${(e as Error).message}`);
      });
    }
    return this.closing;
  }

  /**
   * Tells every other rank that this one is closing, with its counters (`trackProgress`): a rank waiting in a
   * pool run or collective this one never began then fails it, naming this rank, instead of waiting for good.
   * Through the launcher's control channel (lib/control/deaths.ts), which every rank has: sent to each peer
   * directly, it opened a socket to every one at close (1,023 at most in a process) and could hold the exit of
   * a rank whose peer had already gone. Without a launcher, nothing is sent.
   */
  private tellLeaving(): void {
    if (this.failureCause || this.size === 1) return;
    // A context with nothing begun is left out: a rank that never made the pool has begun none of its runs.
    const progress = [...this.progress]
      .map(([context, count]) => [context, count()] as const)
      .filter(([, n]) => n !== 0);
    report({ t: "leaving", p: progress });
  }

  /**
   * Close's collective. While no rank is known dead: an allreduce of what every rank sent to every other (the
   * messages on their way here are the difference), waiting for those, then a barrier, over the whole world.
   *
   * Once a rank died (before close, or during it), close goes on among the ranks alive, each of which learns of
   * every death, in the same order, though not at the same moment: a tree collective that lost a rank would
   * wait for good, so every rank then tells every other alive directly (`closeAmongLive`), and waits for each
   * rank alive (a rank that dies meanwhile is no longer waited for). A rank that learns of the death in the
   * final barrier already has everything sent to it; some other rank may be done and gone, so it does not wait:
   * it only tells every rank alive what a rank that waits needs, and ends.
   */
  private async finish(): Promise<void> {
    const transport = this.transport;
    if (!transport) return;
    try {
      // A failed process cannot take part in close's collective: it only closes its sockets.
      if (this.failureCause) return;
      let drained = false;
      if (this.dead.size === 0) {
        try {
          const channel = this.closeChannel();
          const sent = await coll.allreduce(channel, [...this.sentTo], "sum");
          const expected = sent[this.rank] ?? 0;
          await this.waitDrained(() => this.received >= expected, true);
          drained = true;
          // Once every rank has everything sent to it, nothing this rank sent is still queued in its sockets: it
          // exits at once, instead of lingering while ZeroMQ delivers what a slower peer (encrypting, or busy) has
          // not taken yet.
          await coll.barrier(channel);
          return;
        } catch (e) {
          if (this.failureCause || this.dead.size === 0) throw e;
        }
      }
      await this.closeAmongLive(drained);
    } finally {
      await transport.close();
    }
  }

  /**
   * Resolves once `done()` (checked on every message that arrives, and on every death), rejects when this
   * process fails, or, with `shrinks`, when a rank dies.
   */
  private waitDrained(done: () => boolean, shrinks: boolean): Promise<void> {
    if (done()) return Promise.resolve();
    const dead = shrinks ? this.deadRanks[0] : undefined;
    if (dead !== undefined) return Promise.reject(this.deadError(dead, dead, "close"));
    return new Promise<void>((resolve, reject) => {
      const stop = this.onFailure(reject);
      this.closeShrinks = shrinks;
      this.drain = {
        done,
        resolve: () => {
          this.drain = undefined;
          stop();
          resolve();
        },
        reject: (e) => {
          this.drain = undefined;
          stop();
          reject(e);
        },
      };
    });
  }

  /**
   * Close once a rank died (see `finish`): tells every rank alive how many messages this one sent it, waits
   * for what every rank alive sent here, tells them all so, and waits until each said so too. `drained`: this
   * rank has everything sent to it already (the death came in the final barrier): it tells each rank alive
   * both at once and ends.
   */
  private async closeAmongLive(drained: boolean): Promise<void> {
    const m = this.matcher(CLOSE_CONTEXT);
    const tell = (tag: number, data: (dest: number) => unknown) => {
      for (let r = 0; r < this.size; r++) {
        if (r === this.rank || this.dead.has(r)) continue;
        const bytes = encodeMessage(this.rank, CLOSE_CONTEXT, tag, data(r), "close");
        void this.hand(r, bytes, false, "close");
      }
    };
    tell(CLOSE_TAG.count, (r) => this.sentTo[r]);
    if (drained) {
      tell(CLOSE_TAG.drained, () => true);
      return;
    }
    const counts = await this.hearFromLive(m, CLOSE_TAG.count);
    await this.waitDrained(() => {
      let expected = 0;
      let received = this.received;
      for (let r = 0; r < this.size; r++) {
        if (!this.dead.has(r)) continue;
        received -= this.receivedFrom[r] as number;
      }
      for (const [r, n] of counts) if (!this.dead.has(r)) expected += n as number;
      return received >= expected;
    }, false);
    tell(CLOSE_TAG.drained, () => true);
    await this.hearFromLive(m, CLOSE_TAG.drained);
  }

  /** What every other rank alive sent with `tag` in close's context, by rank; waits for none that dies. */
  private async hearFromLive(m: Matcher, tag: number): Promise<Map<number, unknown>> {
    const heard = new Map<number, unknown>();
    for (;;) {
      let missing = false;
      for (let r = 0; r < this.size && !missing; r++) missing = r !== this.rank && !this.dead.has(r) && !heard.has(r);
      if (!missing) return heard;
      try {
        const msg = await m.receive(ANY, tag, undefined, "close");
        heard.set(msg.source, msg.data);
      } catch (e) {
        // A death rejects the receive (it might have waited for that rank): look again at who is left.
        if (this.failureCause || !(e instanceof RankFailedError)) throw e;
      }
    }
  }

  /** Close's channel over the whole world, while no rank is known dead: any death makes it reject. */
  private closeChannel(): CollectiveChannel {
    let seq = 0;
    const m = this.matcher(CLOSE_CONTEXT);
    const alive = (call: string) => {
      const rank = this.deadRanks[0];
      if (rank !== undefined) throw this.deadError(rank, rank, call);
    };
    return {
      rank: this.rank,
      size: this.size,
      nextSequence: () => seq++,
      send: (dest, tag, data, call) => {
        try {
          alive(call);
          const bytes = encodeMessage(this.rank, CLOSE_CONTEXT, tag, data, call);
          return this.hand(dest, bytes, false, call) ?? Promise.resolve();
        } catch (e) {
          return Promise.reject(e);
        }
      },
      recv: async (source, tag, signal, call) => {
        // A receive posted after a death would wait for good for a rank that went on without this collective.
        alive(call);
        return (await m.receive(source, tag, signal, call)).data;
      },
    };
  }
}

/** The index of the block of SUB_CONTEXTS contexts (of a communicator from split) that `context` is in. */
function blockOf(context: number): number {
  return Math.floor((context - WORLD_CONTEXTS) / SUB_CONTEXTS);
}
