/**
 * Centralized pool messages (all carry the run epoch `e`). Counters are cumulative, so a status that arrives
 * after a later one (chaos delays) cannot undo it: the coordinator keeps the maximum.
 *
 * STATUS  worker -> coordinator  { s: sequence, d: tasks done, n: tasks put so far, t: new tasks, q: their
 *                                  priorities (omitted when all 0), c: tasks it wants to hold, m: mean task ms }
 * GRANT   coordinator -> worker  { t: tasks, f?: trace flow id, h?: tasks to hold, when more than the worker's
 *                                  own capacity (a working coordinator answers late: coordinator.ts `cover`) }
 * DONE    coordinator -> worker  {}                         the pool has terminated
 * FAIL    either way             { r: rank, msg, task }      a handler threw on rank r; everyone stops
 */
export const TAG = { status: 1, grant: 2, done: 3, fail: 4 } as const;

export interface Status {
  s: number;
  d: number;
  n: number;
  t: unknown[];
  q?: number[];
  c: number;
  m: number;
  /** Trace flow id, when tracing and the status carries tasks. */
  f?: string;
}

export interface Fail {
  r: number;
  msg: string;
  task?: unknown;
}
