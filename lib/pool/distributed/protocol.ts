/**
 * The distributed engine's own messages. The balancing initiation and the termination detector declare
 * theirs in their own files (strategy.ts); `protocolFor` numbers them all. Every message carries the run
 * epoch `e` (added by PoolRuntime.send); none relies on the order of delivery.
 *
 * Task messages are the only messages that carry tasks, so the only ones the termination detectors count.
 * Each carries `t` (tasks), `q` (priorities, when any is not 0), `k` (locality keys, null where a task has
 * none, only when some task has one), `s` (the detector's stamp: token ring, rounds the sender has passed)
 * and, under `--trace`, `f` (a trace flow id). The engine's is
 * PINNED    putter -> owner      `put(task, { to })`: pinned on arrival, never moved again
 * and the initiation adds its own (TRANSFER, PUSH, ...).
 *
 * DONE      root -> all          { m: latest task end anywhere (epoch ms), r?: result }; beyond
 *                                FLAT_DONE_RANKS (engine.ts) down the binomial spanning tree, each rank
 *                                passing it on to its children
 * FAIL      any -> all           { r: rank, msg, task }         a handler threw on rank r; everyone stops
 * STOP      any -> root          { r?: result }                 a task called ctx.stop(result)
 * STOPPED   root -> all          { r?: result }                 the first STOP the root got: everyone stops and
 *                                                                resolves with that result
 */
export const ENGINE_TASK_MESSAGES = ["pinned"] as const;
export const ENGINE_MESSAGES = ["done", "fail", "stop", "stopped"] as const;
export type EngineMessage = (typeof ENGINE_MESSAGES)[number];

/** The rank that starts token rounds (token ring) or roots the tree (tree) and announces termination. */
export const ROOT = 0;

/** Who handles messages of one kind. */
export type Owner = "engine" | "tasks" | "balancer" | "detector";

/** The tags of one run's configuration: every rank builds the same, since every rank has the same config. */
export interface Protocol {
  /** Tag of each kind. */
  readonly tag: ReadonlyMap<string, number>;
  /** Kind and owner of each tag (index = tag). */
  readonly kinds: readonly { readonly kind: string; readonly owner: Owner }[];
}

/**
 * Numbers the engine's kinds, then the initiation's task and control kinds, then the detector's, from 1.
 * Two strategies declaring the same kind is a programming error, caught here.
 */
export function protocolFor(
  initiation: { readonly taskMessages: readonly string[]; readonly messages: readonly string[] },
  detector: { readonly messages: readonly string[] },
): Protocol {
  const tag = new Map<string, number>();
  const kinds: { kind: string; owner: Owner }[] = [{ kind: "", owner: "engine" }];
  const add = (list: readonly string[], owner: Owner) => {
    for (const kind of list) {
      if (tag.has(kind)) throw new Error(`internal error: message kind "${kind}" declared twice`);
      tag.set(kind, kinds.length);
      kinds.push({ kind, owner });
    }
  };
  add(ENGINE_TASK_MESSAGES, "tasks");
  add(ENGINE_MESSAGES, "engine");
  add(initiation.taskMessages, "tasks");
  add(initiation.messages, "balancer");
  add(detector.messages, "detector");
  return { tag, kinds };
}
