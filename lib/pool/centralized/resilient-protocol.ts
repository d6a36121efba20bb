/**
 * The messages of a centralized pool that survives worker deaths (option `retries` > 0): the coordinator keeps
 * a ledger of the tasks each worker holds, and a worker's COMMIT changes that ledger and carries the results of
 * what it finished in one message. So everything a worker did up to its latest commit that arrived is counted
 * once, and everything after it is lost with the worker and done again from its ledger: every task's value and
 * every task it put count exactly once. All messages carry the run epoch `e`.
 *
 * A ledger id names one task a worker holds: positive ids are the coordinator's (given with a grant), negative
 * ones the worker's own (tasks its handlers put, given an id when a commit first reports them held). The
 * coordinator's are unique in the run; a worker's are unique among its own (the ledger is per worker).
 *
 * COMMIT   worker -> coordinator  { s: sequence (the coordinator applies commits in this order), x?: ledger ids
 *                                   finished since the last commit, g?: ledger ids given back (the coordinator
 *                                   has their tasks: they go back to its queue), hi?/ht/hq?: ids, tasks and
 *                                   priorities of tasks put here since the last commit and still held here,
 *                                   hw?: indices in hi of watched ones, t?/q?: tasks put here and sent to
 *                                   the coordinator's queue, tw?: indices in t of watched ones (a watched
 *                                   task's puts are watched for a while: resilient-worker.ts WATCH_MS), r?: the partial
 *                                   result of the tasks finished since the last commit, a?: the ledger id of a
 *                                   watched task about to start, c: tasks it wants to hold, m: mean task ms, l:
 *                                   tasks queued here, u: tasks received in grants in all, w: 1 while it waits
 *                                   for a grant, o: 1 while a RELEASE is unanswered }
 * GRANT    coordinator -> worker  { t: tasks, i: their ledger ids, q?: priorities, a?: 1 at each index of a
 *                                   watched task (it may have killed a worker: announced, and started once
 *                                   WATCHING comes back; committed right after) }
 * WATCHING coordinator -> worker  { a: ledger id }  the announcement of watched task `a` was applied: the
 *                                   worker may start it (an announcement still in the worker's socket when the
 *                                   task kills it would be lost with it, and the task never blamed)
 * RESCIND  coordinator -> worker  { i: ledger ids }  (`speculate`) a copy of these tasks completed first
 *                                   elsewhere, or a copy that lost put them: skip any not started (they are
 *                                   off this worker's ledger already)
 * PUT      worker -> coordinator  { t: tasks, q?: priorities }  the app put these on the worker's rank during
 *                                   the run (not a task): into the queue, part of no commit
 * RELEASE, DONE, FAIL, STOP, STOPPED as in plain-protocol.ts.
 *
 * With `speculate`, a commit keeps apart what each ledger task and the tasks it put since the last commit
 * produced, so that a copy that lost can be dropped whole: rr/rv (root ids and their partial results, instead
 * of r), hr (the root of each held task, aligned with hi), tr (of each task sent, aligned with t). A task put by
 * a task of root R has root R until a commit makes it a ledger task of its own; R is in the same commit's x.
 */
import { TAG as PLAIN_TAG } from "./plain-protocol.ts";

/** The plain protocol's tags, plus WATCHING, RESCIND and PUT (below). */
export const TAG = { ...PLAIN_TAG, watching: 8, rescind: 9, put: 10 } as const;

export interface Commit {
  s: number;
  x?: number[];
  g?: number[];
  hi?: number[];
  ht?: unknown[];
  hq?: number[];
  hw?: number[];
  t?: unknown[];
  q?: number[];
  tw?: number[];
  r?: [unknown];
  rr?: number[];
  rv?: ([unknown] | undefined)[];
  hr?: number[];
  tr?: number[];
  a?: number;
  c: number;
  m: number;
  l: number;
  u: number;
  w: number;
  o: number;
}

export interface Grant {
  t: unknown[];
  i: number[];
  q?: number[];
  a?: number[];
}
