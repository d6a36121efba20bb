/**
 * Distributed pool messages. All carry the run epoch `e` (added by PoolRuntime.send); none relies on the
 * order of delivery, since the test-only `chaos` option reorders everything.
 *
 * Task messages: the only messages that carry tasks, so the only ones the termination detectors count.
 * Each also carries `s`, the termination detector's stamp (token ring: rounds the sender has passed), and,
 * under `--trace`, `f`: a trace flow id.
 * TRANSFER  giver -> asker       { t: tasks, q?: priorities, s } answers a REQUEST with about half the giver's
 *                                                                movable tasks
 * PUSH      sender -> partner    { t, q? }                      sender-initiated: the sender's queue is above
 *                                                                highWater
 * PINNED    putter -> owner      { t, q? }                      `put(task, { to })`: pinned on arrival, never
 *                                                                moved again
 *
 * Balancing control:
 * REQUEST   asker -> partner     { l: asker's queued tasks }    answered by exactly one TRANSFER or REFUSE
 * REFUSE    partner -> asker     {}                             the asker is noted as hungry here
 * NOTIFY    partner -> asker     {}                             "I have work now": sent to hungry askers
 * PUSH_ACK  partner -> sender    { l: partner's queued tasks before the push }
 *
 * Termination:
 * TOKEN     r -> r+1 (mod size)  { q: sum of sent-minus-received counts, b: 1 if black, m: latest task end
 *                                  (epoch ms) seen this round, n: round }
 * ACK       child -> parent      { n: task messages acknowledged, m: latest task end in the child's subtree
 *                                  (epoch ms), 0 for an immediate acknowledgement }
 * DONE      root -> all          { m: latest task end anywhere (epoch ms) }
 * FAIL      any -> all           { r: rank, msg, task }         a handler threw on rank r; everyone stops
 * STOP      any -> root          { r?: result }                 a task called ctx.stop(result)
 * STOPPED   root -> all          { r?: result }                 the first STOP the root got: everyone stops and
 *                                                                resolves with that result
 */
export const TAG = {
  transfer: 1,
  push: 2,
  pinned: 3,
  request: 4,
  refuse: 5,
  pushAck: 6,
  token: 7,
  ack: 8,
  done: 9,
  fail: 10,
  notify: 11,
  stop: 12,
  stopped: 13,
} as const;

/** The rank that starts token rounds (token ring) or roots the tree (tree) and announces termination. */
export const ROOT = 0;

/** Most tasks in one TRANSFER or PUSH, so one message stays a reasonable size. */
export const MAX_BATCH = 4096;
