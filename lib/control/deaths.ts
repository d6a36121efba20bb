/**
 * Death notices on a rank: the launcher writes `{"t":"dead","rank":R,"why":W}` to every live rank's control
 * channel (channel.ts) when it survives the death of rank R, which it does only once a pool has asked it to
 * (`{"t":"tolerate","essential":[...]}`, launcher/survival.ts). Every rank gets the notices in the same order. Without
 * a launcher none ever arrives.
 */
import type { Progress } from "./records.ts";

/** Called once per death notice, with the dead rank and why it died (`killed by SIGKILL`, `exit code 3`, ...). */
export type RankDeathListener = (rank: number, why: string) => void;

/**
 * One kind of notice from the launcher: every notice received so far, in order (a listener that registers late
 * is told them all first), and the listeners. It lives in a global (as report.ts's CONTROL_KEY): the preload's
 * control channel and the app's pools may load this module twice (from sources and from dist/, or under two
 * URLs), and must still share it.
 */
function noticeBoard<A extends unknown[]>(key: symbol) {
  const global = globalThis as Record<symbol, { notices: A[]; listeners: Set<(...args: A) => void> } | undefined>;
  const board = (global[key] ??= { notices: [], listeners: new Set() });
  const { notices, listeners } = board;
  return {
    /**
     * Calls `listener` for every notice: first, synchronously, for each one that arrived before this call (in
     * order, so no notice is lost to a late registration), then for each new one as it arrives. Returns a
     * function that unsubscribes it; a listener unsubscribed while a notice is being delivered is not called
     * for it. A listener that throws during the replay makes this call throw (and it is not registered); one
     * that throws for a new notice does not keep the notice from the other listeners, and its error is then
     * uncaught, as from any event handler.
     */
    on(listener: (...args: A) => void): () => void {
      for (const args of notices) listener(...args);
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    /** Records a notice and tells every registered listener (called by the control channel). */
    deliver(...args: A): void {
      notices.push(args);
      // A listener registered from inside another gets this notice by its replay, not a second time from here.
      for (const listener of [...listeners]) {
        if (!listeners.has(listener)) continue;
        try {
          listener(...args);
        } catch (e) {
          queueMicrotask(() => {
            throw e;
          });
        }
      }
    },
  };
}

const deaths = noticeBoard<[rank: number, why: string]>(Symbol.for("workpool.deaths"));

/** Calls `listener` for every death notice this rank gets from the launcher (see noticeBoard's `on`). */
export const onRankDeath = (listener: RankDeathListener): (() => void) => deaths.on(listener);

/** Records a death notice and tells every registered listener (called by the control channel). */
export const deliverRankDeath = (rank: number, why: string): void => deaths.deliver(rank, why);

/**
 * Leave notices: a rank that closes its world sends the launcher `{"t":"leaving","p":[[context, count], ...]}`
 * (what it began: runs of each pool, world collectives; lib/comm/router.ts), and the launcher passes
 * `{"t":"left","rank":R,"p":...}` on to every rank not closing itself, for each leaver that began less of
 * something than every leaver before it (launcher/leavers.ts). Through the launcher, not to every peer directly: a
 * rank then opens no new connection at close. Without a launcher none ever arrives.
 */
export type RankLeftListener = (rank: number, progress: Progress) => void;

const leaves = noticeBoard<[rank: number, progress: Progress]>(Symbol.for("workpool.left"));

/** Calls `listener` for every leave notice, first for those that arrived before; returns its remover. */
export const onRankLeft = (listener: RankLeftListener): (() => void) => leaves.on(listener);

/** Records a leave notice and tells every listener (called by the control channel). */
export const deliverRankLeft = (rank: number, progress: Progress): void => leaves.deliver(rank, progress);

/**
 * Shrink answers: a rank that calls `World#shrink` sends the launcher `{"t":"shrink","n":N,"b":B}` (its N-th
 * shrink, B its first free context), and once every rank still alive has sent its N-th, the launcher writes
 * every rank `{"t":"shrunk","n":N,"dead":[...],"b":MAX}`: the ranks dead so far, in the order it told them (so
 * every rank has read each of those death notices first), and the largest B. Every survivor gets the same
 * answer, whatever it knew when it asked (launcher/shrink.ts).
 */
export type ShrunkListener = (n: number, dead: readonly number[], base: number) => void;

const shrinks = noticeBoard<[n: number, dead: readonly number[], base: number]>(Symbol.for("workpool.shrunk"));

/** Calls `listener` for every shrink answer, first for those that arrived before; returns its remover. */
export const onShrunk = (listener: ShrunkListener): (() => void) => shrinks.on(listener);

/** Records a shrink answer and tells every listener (called by the control channel). */
export const deliverShrunk = (n: number, dead: readonly number[], base: number): void => shrinks.deliver(n, dead, base);
