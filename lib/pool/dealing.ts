/**
 * When a rank that holds a few coarse tasks deals them rather than run them (issue 29), in both pool modes: the
 * receiver-initiated balancer (balance/receiver.ts `open`, `standBy`) and the centralized pool's working
 * coordinator (centralized/coordinator.ts `standsBy`, centralized/working.ts).
 */

/**
 * A rank opens a run with offers only while it holds at most this many tasks per rank: few tasks a rank, the
 * case where each may be long and one rank's first task would strand the rest. With more, halving spreads
 * them in a few steps, and an even split up front is worse for it (in the timed simulation at 1,024 ranks, one
 * source of 100 short tasks a rank ended 1.22x the bound split up front, 1.12x by stealing alone).
 */
export const OPEN_MAX_PER_RANK = 4;

/**
 * Fewest ranks at which a rank deals its few tasks instead of running them (receiver `standBy`; the centralized
 * pool's working coordinator likewise, Coordinator `standsBy`). The dealer gives up its core; each long task of
 * its own would keep about half the others' asks waiting a task's time: worth it from 3 others up (at 3 ranks,
 * 3 tasks dealt took two tasks' time where running one each takes one).
 */
export const MIN_DEALING_RANKS = 4;

/** `tasks` are few for a job of `size` ranks: at most OPEN_MAX_PER_RANK a rank. */
export function fewPerRank(tasks: number, size: number): boolean {
  return tasks <= OPEN_MAX_PER_RANK * size;
}

/** A job of `size` ranks is large enough for a rank to deal its few tasks rather than run them. */
export function dealsAt(size: number): boolean {
  return size >= MIN_DEALING_RANKS;
}
