import { RankFailedError } from "../errors.ts";
import { encodeMessage } from "./codec.ts";
import type { CollectiveChannel } from "./collectives.ts";
import * as coll from "./collectives.ts";
import { CLOSE_CONTEXT } from "./contexts.ts";
import type { Departures } from "./departures.ts";
import { ANY, type Matcher } from "./matcher.ts";
import type { Transport } from "./transport.ts";
import { report } from "../control/report.ts";

/**
 * The collective end of a process's messaging (World#close; the router begins it, Router#close): no rank exits
 * while a message to it is on its way. Every rank counts what it sent to each other rank and what it received
 * (the router does, per message); close agrees on those counts, waits for the messages still on their way here,
 * and only then lets the transport close. It runs in a context of its own (CLOSE_CONTEXT), whose messages are
 * not counted.
 */

/**
 * Tags of close's exchange once a rank died (see closeAmongLive), and of its last point-to-point words
 * (`tellLastSent`): far above its collectives' sequence.
 */
const CLOSE_TAG = { count: 2 ** 31, drained: 2 ** 31 + 1, lastSent: 2 ** 31 + 2 } as const;
export const LAST_SENT_TAG = CLOSE_TAG.lastSent;

/**
 * While close waits for messages still on their way here: the router checks `done` on every message that
 * arrives, and calls `died` on every death.
 */
export interface Drain {
  /** Whether every message waited for has come. */
  readonly done: () => boolean;
  /** Ends the wait: everything came. */
  readonly resolve: () => void;
  /** World rank `rank` died: the wait may be over, or (close's collective over the whole world) cannot end. */
  readonly died: (rank: number) => void;
}

/** What close needs of the router (router.ts): its counts, its close context and its way out. */
export interface CloseSite {
  /** This process's world rank and the world's size. */
  readonly rank: number;
  readonly size: number;
  /** Messages sent to each other rank, and received from other ranks, close's own excepted. */
  readonly sentTo: readonly number[];
  readonly received: number;
  /** Of `received`, those from each world rank. */
  readonly receivedFrom: readonly number[];
  readonly departures: Departures;
  readonly failed: boolean;
  /** Set while close waits for messages still on their way here; the router reads it. */
  drain: Drain | undefined;
  onFailure(listener: (error: RankFailedError) => void): () => void;
  matcher(context: number): Matcher;
  hand(dest: number, bytes: Buffer, counted: boolean, call: string): Promise<void> | undefined;
}

/**
 * Tells every other rank that this one is closing, with its counters (Departures#trackProgress): a rank waiting
 * in a pool run or collective this one never began then fails it, naming this rank, instead of waiting for
 * good. Through the launcher's control channel (lib/control/deaths.ts), which every rank has: sent to each peer
 * directly, it opened a socket to every one at close (1,023 at most in a process) and could hold the exit of
 * a rank whose peer had already gone. Without a launcher, nothing is sent.
 */
export function tellLeaving(site: CloseSite): void {
  if (site.failed || site.size === 1) return;
  report({ t: "leaving", p: site.departures.progressNow() });
}

/**
 * Tells each rank this one sent a point-to-point message to (`pointToPoint`) that it closes: a message on close's
 * context that leaves after everything this rank sent there, down the same connection, so that rank then has
 * all of it, and a receive of its naming this rank that nothing matched never will be (Router `peerClosed`; the
 * mismatched tag of an app's send and recv waited until --timeout). Only to those ranks: it opens no connection.
 */
export function tellLastSent(site: CloseSite, pointToPoint: ReadonlySet<number>): void {
  if (site.failed) return;
  for (const r of pointToPoint) {
    if (r === site.rank || site.departures.dead.has(r)) continue;
    void site.hand(r, encodeMessage(site.rank, CLOSE_CONTEXT, CLOSE_TAG.lastSent, null, "close"), false, "close");
  }
}

/**
 * Close's collective, then the transport's close. While no rank is known dead: an allreduce of what every rank
 * sent to every other (the messages on their way here are the difference), waiting for those, then a barrier,
 * over the whole world.
 *
 * Once a rank died (before close, or during it), close goes on among the ranks alive, each of which learns of
 * every death, in the same order, though not at the same moment: a tree collective that lost a rank would
 * wait for good, so every rank then tells every other alive directly (`closeAmongLive`), and waits for each
 * rank alive (a rank that dies meanwhile is no longer waited for). A rank that learns of the death in the
 * final barrier already has everything sent to it; some other rank may be done and gone, so it does not wait:
 * it only tells every rank alive what a rank that waits needs, and ends.
 */
export async function finishClose(site: CloseSite, transport: Transport | undefined): Promise<void> {
  if (!transport) return;
  const departures = site.departures;
  try {
    // A failed process cannot take part in close's collective: it only closes its sockets.
    if (site.failed) return;
    let drained = false;
    if (departures.dead.size === 0) {
      try {
        const channel = closeChannel(site);
        const sent = await coll.allreduce(channel, [...site.sentTo], "sum");
        const expected = sent[site.rank] ?? 0;
        await waitDrained(site, () => site.received >= expected, true);
        drained = true;
        // Once every rank has everything sent to it, nothing this rank sent is still queued in its sockets: it
        // exits at once, instead of lingering while ZeroMQ delivers what a slower peer (encrypting, or busy) has
        // not taken yet.
        await coll.barrier(channel);
        return;
      } catch (e) {
        if (site.failed || departures.dead.size === 0) throw e;
      }
    }
    await closeAmongLive(site, drained);
  } finally {
    await transport.close();
  }
}

/**
 * Resolves once `done()` (checked on every message that arrives, and on every death), rejects when this
 * process fails, or, with `shrinks`, when a rank dies.
 */
function waitDrained(site: CloseSite, done: () => boolean, shrinks: boolean): Promise<void> {
  if (done()) return Promise.resolve();
  const dead = shrinks ? site.departures.deadRanks[0] : undefined;
  if (dead !== undefined) return Promise.reject(site.departures.deadError(dead, dead, "close"));
  return new Promise<void>((resolve, reject) => {
    const stop = site.onFailure(reject);
    const end = (): void => {
      site.drain = undefined;
      stop();
    };
    const drained = (): void => {
      end();
      resolve();
    };
    site.drain = {
      done,
      resolve: drained,
      died: (rank) => {
        if (shrinks) {
          end();
          reject(site.departures.deadError(rank, rank, "close"));
        } else if (done()) drained();
      },
    };
  });
}

/**
 * Close once a rank died (see `finishClose`): tells every rank alive how many messages this one sent it, waits
 * for what every rank alive sent here, tells them all so, and waits until each said so too. `drained`: this
 * rank has everything sent to it already (the death came in the final barrier): it tells each rank alive
 * both at once and ends.
 */
async function closeAmongLive(site: CloseSite, drained: boolean): Promise<void> {
  const m = site.matcher(CLOSE_CONTEXT);
  const dead = site.departures.dead;
  const tell = (tag: number, data: (dest: number) => unknown) => {
    for (let r = 0; r < site.size; r++) {
      if (r === site.rank || dead.has(r)) continue;
      const bytes = encodeMessage(site.rank, CLOSE_CONTEXT, tag, data(r), "close");
      void site.hand(r, bytes, false, "close");
    }
  };
  tell(CLOSE_TAG.count, (r) => site.sentTo[r]);
  if (drained) {
    tell(CLOSE_TAG.drained, () => true);
    return;
  }
  const counts = await hearFromLive(site, m, CLOSE_TAG.count);
  await waitDrained(
    site,
    () => {
      let expected = 0;
      let received = site.received;
      for (let r = 0; r < site.size; r++) {
        if (!dead.has(r)) continue;
        received -= site.receivedFrom[r] as number;
      }
      for (const [r, n] of counts) if (!dead.has(r)) expected += n as number;
      return received >= expected;
    },
    false,
  );
  tell(CLOSE_TAG.drained, () => true);
  await hearFromLive(site, m, CLOSE_TAG.drained);
}

/** What every other rank alive sent with `tag` in close's context, by rank; waits for none that dies. */
async function hearFromLive(site: CloseSite, m: Matcher, tag: number): Promise<Map<number, unknown>> {
  const heard = new Map<number, unknown>();
  const dead = site.departures.dead;
  for (;;) {
    let missing = false;
    for (let r = 0; r < site.size && !missing; r++) missing = r !== site.rank && !dead.has(r) && !heard.has(r);
    if (!missing) return heard;
    try {
      const msg = await m.receive(ANY, tag, undefined, "close");
      heard.set(msg.source, msg.data);
    } catch (e) {
      // A death rejects the receive (it might have waited for that rank): look again at who is left.
      if (site.failed || !(e instanceof RankFailedError)) throw e;
    }
  }
}

/** Close's channel over the whole world, while no rank is known dead: any death makes it reject. */
function closeChannel(site: CloseSite): CollectiveChannel {
  let seq = 0;
  const m = site.matcher(CLOSE_CONTEXT);
  const alive = (call: string) => {
    const rank = site.departures.deadRanks[0];
    if (rank !== undefined) throw site.departures.deadError(rank, rank, call);
  };
  return {
    rank: site.rank,
    size: site.size,
    nextSequence: () => seq++,
    send: (dest, tag, data, call) => {
      try {
        alive(call);
        const bytes = encodeMessage(site.rank, CLOSE_CONTEXT, tag, data, call);
        return site.hand(dest, bytes, false, call) ?? Promise.resolve();
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
