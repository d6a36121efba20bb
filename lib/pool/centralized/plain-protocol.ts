/**
 * Centralized pool messages (all carry the run epoch `e`). Counters are cumulative, so a status that arrives
 * after a later one (the test-only chaos delays) cannot undo it: the coordinator reads the counters of the
 * latest status (by sequence number) only.
 *
 * STATUS   worker -> coordinator  { s: sequence, d: tasks run, k: tasks kept (put on this worker and queued
 *                                   here), v: tasks given back (kept or granted ones sent to the coordinator),
 *                                   n: tasks sent to the coordinator in all (puts not kept, plus v), t: tasks
 *                                   sent with this status, q: their priorities (omitted when all 0), c: tasks it
 *                                   wants to hold, m: mean task ms, l: tasks queued here now, w: 1 while
 *                                   it waits for a grant (it asked, and no grant or refill came since),
 *                                   o: 1 while a RELEASE is still unanswered, x?: the async tasks it runs at
 *                                   once (its flight's limit, PoolOptions `concurrency`), when over 1 and its
 *                                   tasks mostly wait (worker.ts `waits`),
 *                                   r?: partial result (results.ts) }
 *                                   The worker holds granted + k - d - v tasks (queued or running): the
 *                                   coordinator's view of its load, exact as of that status.
 * GRANT    coordinator -> worker  { t: tasks, q?: priorities, f?: trace flow id, h?: tasks to hold, when more
 *                                   than the worker's own capacity (a working coordinator answers late:
 *                                   coordinator.ts `cover`), z?: 1 when the request it answers found tasks in
 *                                   the queue: its turnaround is a real one (a worker that ran dry waiting for
 *                                   it asked too little); not when the coordinator had to find the work }
 * RELEASE  coordinator -> worker  {}                 other workers have run dry and the coordinator has
 *                                                    nothing for them: send about half of your queued tasks,
 *                                                    from the oldest end, now or as soon as you have any (a standing
 *                                                    request, answered by one status with tasks, or by going
 *                                                    idle)
 * DONE     coordinator -> worker  { r?: result }      the pool has terminated
 * FAIL     either way             { r: rank, k: kind, msg, task?, cn?, cm? }  the run failed on rank r (a
 *                                   handler threw, its signal aborted, or it failed otherwise: failure.ts);
 *                                   everyone stops
 * STOP     worker -> coordinator  { r?: result }              a task called ctx.stop(result)
 * STOPPED  coordinator -> worker  { r?: result }              the first STOP the coordinator got: stop and resolve
 *                                                             with that result
 */
export const TAG = { status: 1, grant: 2, done: 3, fail: 4, release: 5, stop: 6, stopped: 7 } as const;

export interface Status {
  s: number;
  d: number;
  k: number;
  v: number;
  n: number;
  t: unknown[];
  q?: number[];
  c: number;
  m: number;
  l: number;
  w: number;
  o: number;
  x?: number;
  r?: [unknown];
  /** Trace flow id, when tracing and the status carries tasks. */
  f?: string;
}

export type { FailBody as Fail } from "../failure.ts";
