import { readdirSync, readFileSync } from "node:fs";
import { ENV, envMs } from "./env.ts";
import { ClosedError, RankFailedError } from "../errors.ts";
import { type Drain, finishClose, LAST_SENT_TAG, tellLastSent, tellLeaving } from "./close.ts";
import { decodeFrame, decodeSplit } from "./codec.ts";
import { blockOf, CLOSE_CONTEXT, CONTEXT, offsetInBlock, WORLD_CONTEXTS } from "./contexts.ts";
import { Departures } from "./departures.ts";
import { ANY, Matcher } from "./matcher.ts";
import { type StallSite, StallWatch } from "./stall.ts";
import type { Transport } from "./transport.ts";
import { appZmqWaiting } from "./zmq-activity.ts";

/** Handler that takes every message of one context as it arrives (used by pools). */
export type ContextListener = (source: number, tag: number, data: unknown) => void;

/** How often the idle watch looks (see Router.watchIdle): an app that forgot close() ends within ~2x this. */
const IDLE_CHECK_MS = envMs(ENV.idleCheckMs, 1000);
/**
 * A process that used more CPU time than this fraction of the time between two idle checks is working, whatever
 * the event loop shows: on a thread of libuv's (crypto, zlib) or a worker thread. An idle rank uses well under
 * 1% (its heartbeat, ZeroMQ's thread waiting).
 */
const BUSY_CPU = 0.1;
/** Resources a rank has from the start (its stdio): only more of them than at start count as activity. */
const STDIO = new Set(["PipeWrap", "TTYWrap"]);

/**
 * What this process's threads did, in ms: the CPU time of every thread, and (Linux) the time each thread but the
 * main one waited for a core. Work that Node lists nowhere (a crypto or zlib job on libuv's threads, a worker
 * thread) shows in the first; on a crowded machine it shows in the second, where those threads wait their turn
 * (a rank awaiting pbkdf2 jobs got less than BUSY_CPU of a core in two checks in a row while the test suite ran
 * beside it, and was taken for idle). The main thread's waits are left out: it is what wakes for each check.
 */
function threadsWorkMs(): number {
  const cpu = process.cpuUsage();
  return (cpu.user + cpu.system) / 1000 + othersWaitedMs();
}

function othersWaitedMs(): number {
  if (process.platform !== "linux") return 0;
  let ns = 0;
  try {
    for (const tid of readdirSync("/proc/self/task")) {
      if (tid === String(process.pid)) continue;
      try {
        ns += Number(readFileSync(`/proc/self/task/${tid}/schedstat`, "latin1").split(" ")[1]) || 0;
      } catch {
        /* the thread ended */
      }
    }
  } catch {
    return 0;
  }
  return ns / 1e6;
}

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
 * The routers of this process, for one 'exit' listener: a process that ends while a receive waits, its world not
 * closed, says which receive. A one-rank job whose recv no send will ever match has no socket to keep it alive,
 * and node exits with status 13 (an unsettled top-level await), saying nothing (its 'exit' listeners see 0).
 * Any other status has a cause of its own.
 */
const ROUTERS = new Set<Router>();
process.on("exit", (code) => {
  if (code !== 0 && code !== 13) return;
  for (const router of ROUTERS) router.sayWaiting();
});

/**
 * One process's messaging, shared by the world and every communicator split from it: the transport, the
 * matcher or listener of each context, what `close` counts (close.ts runs it), the ranks gone (departures.ts;
 * their deaths are applied here, to the matchers), and the failure of the receive loop. Ranks here are world
 * ranks; a communicator translates its own before calling in. The `source` of a message is the sender's rank in
 * the communicator it was sent in (the header carries it), so receives see their communicator's ranks.
 */
export class Router implements StallSite {
  /** This process's world rank and the world's size. */
  readonly rank: number;
  readonly size: number;
  private transport: Transport | undefined;
  readonly matchers = new Map<number, Matcher>();
  private readonly listeners = new Map<number, ContextListener>();
  /** Messages sent to each other rank, and received from other ranks (`close`'s own excepted). */
  readonly sentTo: number[];
  /** World ranks this one sent a point-to-point message to (`notePointToPoint`), told when it closes. */
  private readonly pointToPoint = new Set<number>();
  /** World ranks that closed after their last point-to-point message to this one arrived (`peerClosed`). */
  private readonly closedPeers = new Set<number>();
  received = 0;
  /** Every message handed to each other rank, and every one that reached this rank, close's too (stall.ts). */
  readonly wireSent: number[];
  wireReceived = 0;
  /** Of `received`, those from each world rank; the rest are `unplaced`'s. */
  readonly receivedFrom: number[];
  /**
   * Messages received in the block of a communicator not made here yet (its split still runs here while a
   * faster member already sends in it), by block and sender (its rank there): placed in `receivedFrom` once
   * the communicator is made (`addCommunicator`).
   */
  private readonly unplaced = new Map<number, Map<number, number>>();
  /** The members (world ranks) of each communicator from `split` on this process, by block. */
  private readonly blocks = new Map<number, readonly number[]>();
  /** The ranks that died or closed their world, and what this rank has begun (sent to the others at close). */
  readonly departures: Departures;
  /** `departures.dead`, read here per message. */
  private readonly dead: ReadonlyMap<number, string>;
  /** While `close` waits for messages still on their way here (close.ts sets it): checked per message. */
  drain: Drain | undefined;
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
  /** Pool runs (and the like) in progress here, with what each waits in when it waits on messages: see `hold`. */
  private readonly holds = new Map<object, (() => string | undefined) | undefined>();

  constructor(rank: number, size: number) {
    this.rank = rank;
    this.size = size;
    this.sentTo = new Array<number>(size).fill(0);
    this.wireSent = new Array<number>(size).fill(0);
    this.receivedFrom = new Array<number>(size).fill(0);
    this.departures = new Departures(rank, size);
    this.dead = this.departures.dead;
    ROUTERS.add(this);
  }

  /** At exit: the receives still waiting here, unless the world was closed (see ROUTERS). */
  sayWaiting(): void {
    if (this.closing) return;
    const waits = [...this.matchers.values()].flatMap((m) => m.describePending());
    if (waits.length === 0) return;
    process.stderr.write(
      `workpool: rank ${this.rank}: the process ended while it waited in ${waits.join("; ")}: ` +
        "nothing was left that could send it\n",
    );
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
    this.wireReceived++;
    const from = this.senderOf(source, context);
    if (from !== undefined && this.dead.size > 0 && this.dead.has(from)) return;
    if (context === CLOSE_CONTEXT && tag === LAST_SENT_TAG) {
      this.peerClosed(source);
      return;
    }
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
        for (const rank of this.closedPeers) this.applyClosed(context, m, rank);
      }
    }
  }

  private readonly dispatch = (source: number, context: number, tag: number, data: unknown): void => {
    const listener = this.listeners.get(context);
    if (listener) listener(source, tag, data);
    else this.matcher(context).deliver(source, tag, data);
  };

  /** See StallSite (stall.ts). */
  membersOf(context: number): readonly number[] | undefined {
    return this.blocks.get(blockOf(context));
  }

  matcher(context: number): Matcher {
    let m = this.matchers.get(context);
    if (!m) {
      m = new Matcher();
      if (this.closing && context !== CLOSE_CONTEXT) m.close("the world was closed");
      else if (this.failureCause) m.fail(this.failedError);
      for (const rank of this.dead.keys()) this.applyDeath(context, m, rank, false);
      for (const rank of this.closedPeers) this.applyClosed(context, m, rank);
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
    if (this.dead.has(dest)) throw this.departures.deadError(dest, dest, call);
    if (counted) {
      if (this.closing) throw new ClosedError(`${call}: the world is closed`);
      this.sentTo[dest]!++;
    }
    this.wireSent[dest]!++;
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
   * pending and later collective rejects (Departures#brokenBy). `close` goes on among the ranks still alive. Then
   * the Departures#onPeerDeath listeners hear of it. Its own rank, or a rank it already knows dead, is ignored.
   */
  peerDied(rank: number, why: string): void {
    if (!this.departures.died(rank, why)) return;
    this.transport?.drop(rank);
    for (const [context, m] of this.matchers) this.applyDeath(context, m, rank);
    this.drain?.died(rank);
    this.departures.tellDeath(rank, why);
  }

  /**
   * World rank `rank`'s death applies to the matcher of `context`, if `rank` is in its communicator (one not
   * made here yet is done by `addCommunicator`): a collective context fails for good; close's rejects every
   * pending receive (its collective over the ranks alive starts again); any other rejects the receives that
   * could wait for `rank`. `pending` false: a new matcher, nothing pending.
   */
  private applyDeath(context: number, m: Matcher, rank: number, pending = true): void {
    if (context === CLOSE_CONTEXT) {
      m.peerDied(rank, (call) => this.departures.deadError(rank, rank, call), pending);
      return;
    }
    const place = this.placeOf(context, rank);
    if (!place) return;
    const { there, offset } = place;
    const error = (call: string) => this.departures.deadError(rank, there, call, offset === CONTEXT.collective);
    if (offset === CONTEXT.collective) m.fail(error);
    else m.peerDied(there, error);
  }

  /**
   * Where world rank `rank` is in `context`: its rank `there` in that context's communicator (whose `members`, in
   * world ranks, a communicator from split has), and the context's `offset` in its block (CONTEXT); undefined
   * when the communicator is not made here yet or `rank` is not in it.
   */
  private placeOf(
    context: number,
    rank: number,
  ): { there: number; offset: number; members: readonly number[] | undefined } | undefined {
    const members = context < WORLD_CONTEXTS ? undefined : this.membersOf(context);
    if (context >= WORLD_CONTEXTS && !members) return undefined;
    const there = members ? members.indexOf(rank) : rank;
    if (there < 0) return undefined;
    return { there, offset: offsetInBlock(context), members };
  }

  /** This rank sends world rank `dest` a point-to-point message (a communicator's `send`, `sendrecv`). */
  notePointToPoint(dest: number): void {
    if (dest !== this.rank) this.pointToPoint.add(dest);
  }

  /**
   * World rank `rank` closed its world, and everything it sent here has arrived (close.ts `tellLastSent` comes
   * after it, down the same connection): a point-to-point receive naming it that nothing it sent matched never
   * will be, and rejects with ClosedError, now or when posted; one from any rank, when every other rank closed
   * so or died. The receives of its collectives, pools and close are left alone.
   */
  peerClosed(rank: number): void {
    if (rank === this.rank || this.closedPeers.has(rank)) return;
    this.closedPeers.add(rank);
    for (const [context, m] of this.matchers) this.applyClosed(context, m, rank);
  }

  /** World rank `rank` closed (`peerClosed`): applied to the matcher of `context` if it is a point-to-point one. */
  private applyClosed(context: number, m: Matcher, rank: number): void {
    if (context === CLOSE_CONTEXT) return;
    const place = this.placeOf(context, rank);
    if (!place || place.offset !== CONTEXT.user) return;
    const { there, members } = place;
    const gone = (r: number) => r === this.rank || this.closedPeers.has(r) || this.dead.has(r);
    const everyone = members ?? Array.from({ length: this.size }, (_, r) => r);
    m.peerLeft(there, everyone.every(gone), (call) => {
      // What it did send here, which no receive took: a tag that differs by one is the usual mistake.
      const held = m.queuedTags(there);
      const sent = held.length === 0 ? "" : `; what it sent here that no receive took: ${held.join(", ")}`;
      return new ClosedError(
        `${call}: rank ${there} closed its world, and nothing it sent here matches (check the send's tag and ` +
          `dest)${sent}`,
      );
    });
  }

  /** True when a message this rank sent waits behind a send in flight (Transport `held`). */
  get sendsHeld(): boolean {
    return this.transport?.held ?? false;
  }

  /**
   * Marks this process busy on something the receive side cannot see (a pool run between messages); call
   * the returned function when done. See `watchIdle`. `waits`: what it is (`run 2 of pool1`) while it can only go
   * on when a message comes, unless something the idle watch sees (a timer of its own) is pending, or undefined
   * while it may be woken otherwise: for the deadlock check (stall.ts). Without it (a send held by a slow peer),
   * the process is busy while it holds.
   */
  hold(waits?: () => string | undefined): () => void {
    const key = {};
    this.holds.set(key, waits);
    return () => void this.holds.delete(key);
  }

  /**
   * An app that never calls close() would otherwise hang for ever: the open sockets keep the process alive
   * after its last statement. Every IDLE_CHECK_MS (an unref'd timer, which keeps nothing alive) this looks
   * for anything still to happen: a receive or collective waiting, a pool run, a send or receive on a ZeroMQ
   * socket of the app's (zmq-activity.ts: Node does not list those), any resource keeping the event loop
   * alive beyond what it was at start (stdio pipes), such as a timer, a socket or a child process of the app's,
   * or CPU time used since the last check (BUSY_CPU: a crypto job on libuv's threads, a worker thread, which Node
   * lists nowhere). Twice in a row nothing: the app is done but did not close, or waits on a promise nothing
   * can settle. The rank says so and exits 1, so the launcher names it and brings the job down. Receives or
   * collectives waiting and nothing else: the rank waits on messages alone, which the launcher is told for its
   * deadlock check (stall.ts), in close too.
   */
  private watchIdle(): void {
    // process.stdout and process.stderr make their pipes when first used: made now, they are in the baseline, so an
    // app that prints its first line later does not look busy for good. (Under tsx something had used both before
    // this; a plain JavaScript app that printed and forgot close() on 2 ranks hung until --timeout.)
    void process.stdout;
    void process.stderr;
    const baseline = resourceCounts(true);
    const stalls = this.size > 1 ? new StallWatch(this) : undefined;
    let strikes = 0;
    let work = threadsWorkMs();
    let lastCheck = performance.now();
    const timer = setInterval(() => {
      if (this.failureCause || this.transport?.isClosed) {
        clearInterval(timer);
        return;
      }
      let waiting = 0;
      for (const m of this.matchers.values()) waiting += m.waiting;
      const held: string[] = [];
      const workNow = threadsWorkMs();
      const checkedAt = performance.now();
      // What the threads did since the last check (threadsWorkMs), against the time since, which a loaded
      // machine stretches beyond IDLE_CHECK_MS.
      const computing = workNow - work > BUSY_CPU * (checkedAt - lastCheck);
      work = workNow;
      lastCheck = checkedAt;
      let busy = computing || appZmqWaiting() > 0 || beyond(resourceCounts(), baseline);
      for (const waits of this.holds.values()) {
        const what = waits?.();
        if (what === undefined) busy = true;
        else held.push(what);
      }
      stalls?.check(!busy && (waiting > 0 || held.length > 0), held);
      if (this.closing || waiting > 0 || held.length > 0 || busy) {
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

  /** See World#close: the collective end of the whole process's messaging (close.ts). */
  close(): Promise<void> {
    if (!this.closing) {
      for (const [context, m] of this.matchers) if (context !== CLOSE_CONTEXT) m.close("the world was closed");
      tellLeaving(this);
      tellLastSent(this, this.pointToPoint);
      ROUTERS.delete(this);
      this.closing = this.transport?.flush() ?? Promise.resolve();
      finishClose(this, this.transport).catch((e: unknown) => {
        process.emitWarning(`workpool rank ${this.rank}: close failed: ${(e as Error).message}`);
      });
    }
    return this.closing;
  }
}
