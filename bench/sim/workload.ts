/**
 * The work of a timed simulation (timed.ts): the tasks, with their simulated durations, where they start, the
 * children a tree task puts when it ends, and the tally of what ran, from which the run's bound and its
 * exactly-once check follow. A task's duration and children depend on the seed and its place in the tree only,
 * never on the schedule, so every pool (and the ideal scheduler, `runIdeal`) does the same work.
 *
 * Workloads, all of emulated work (Pareto alpha 3, mean 20 ms, as bench/programs/emulated.ts):
 * - one-source: `workPerRankMs x size` of independent tasks, all put on rank 0.
 * - spread: every rank puts its own `workPerRankMs` of independent tasks (its own seed).
 * - tree: one root task on rank 0 whose subtree holds `workPerRankMs x size` of work: each task takes a
 *   Pareto duration of its subtree's budget and splits the rest among 1 to 4 children at random weights
 *   (a leaf below 1 ms of rest keeps it), so subtrees are uneven and work only spreads as the tree unfolds.
 * - deep: the same from one root task, in the shape of UTS T3 (a binomial tree near its critical point: long
 *   chains, a narrow frontier): each task has one child, which gets all the rest, except that one task in
 *   `DEEP_FORK` (seeded) forks two, at random weights; so few tasks are ever queued beyond those running, and
 *   the longest chain is a good part of the bound.
 */
import { Random } from "../../apps/common/random.ts";
import { seededRandom } from "../../lib/internal.ts";
import { drawEmulatedMs, MEAN_MS, putEmulatedWork } from "../programs/emulated.ts";
import type { VirtualClock } from "./clock.ts";

export const TIMED_WORKLOADS = ["one-source", "spread", "tree", "deep"] as const;
export type TimedWorkload = (typeof TIMED_WORKLOADS)[number];

export interface SimTask {
  readonly id: number;
  readonly ms: number;
  /** tree: work of the task's subtree below it, ms. */
  readonly w?: number;
  /** tree: durations of the chain of tasks above it, ms. */
  readonly c?: number;
  /** tree: the task's place in the tree, hashed (its shape depends on the seed only, not on the schedule). */
  readonly k?: number;
}

/** Below this much work left in its subtree, a tree task is a leaf and does it all itself. */
const LEAF_REST_MS = 1;
const MAX_CHILDREN = 4;
/** deep: the share of tasks that fork two children (the others have one). */
const DEEP_FORK = 0.25;

export class TimedWork {
  /** Runs of each task so far, by id. */
  readonly executed: number[] = [];
  /** Tasks made so far (tree tasks are made as their parents end), and their total duration. */
  created = 0;
  totalWorkMs = 0;
  /** Longest task; for a tree, the longest root-to-leaf chain of task durations. */
  longestMs = 0;
  /** Task runs, and the virtual time the last one ended. */
  ran = 0;
  lastTaskMs = 0;
  /** Each rank's tasks at the start (emptied once the ranks have them). */
  readonly initial: SimTask[][];
  private readonly tree: boolean;

  /** `workSeed`: the emulated work's seed, as the real bench's rank programs draw it (timed.ts TimedParams). */
  constructor(
    private readonly size: number,
    private readonly workload: TimedWorkload,
    workPerRankMs: number,
    seed: number,
    workSeed: number | undefined,
  ) {
    this.tree = workload === "tree" || workload === "deep";
    const initial: SimTask[][] = Array.from({ length: size }, () => []);
    this.initial = initial;
    const budget = workPerRankMs * size;
    if (workload === "one-source")
      putEmulatedWork((ms) => initial[0]?.push(this.newTask(ms)), budget, workSeed ?? seed);
    else if (workload === "spread") {
      for (let r = 0; r < size; r++) {
        const s = workSeed === undefined ? seed * 100_003 + r : workSeed + 7919 * r;
        putEmulatedWork((ms) => initial[r]?.push(this.newTask(ms)), workPerRankMs, s);
      }
    } else initial[0]?.push(this.treeTask(budget, 0, mix(seed, workload === "deep" ? 0xdee9 : 0x5eed)));
  }

  /** max(total work / ranks, longest task or chain): no schedule ends sooner. */
  bound(): number {
    return Math.max(this.totalWorkMs / this.size, this.longestMs);
  }

  /** Counts a run of `task`; returns its children (tree workloads), for the handler to put. */
  run(task: SimTask): SimTask[] | undefined {
    this.executed[task.id] = (this.executed[task.id] ?? 0) + 1;
    this.ran++;
    return this.tree ? this.childrenOf(task) : undefined;
  }

  private newTask(ms: number, tree?: { w: number; c: number; k: number }): SimTask {
    this.totalWorkMs += ms;
    const chain = (tree?.c ?? 0) + ms;
    if (chain > this.longestMs) this.longestMs = chain;
    const t: SimTask = tree === undefined ? { id: this.created, ms } : { id: this.created, ms, ...tree };
    this.executed[this.created++] = 0;
    return t;
  }

  /** A tree task with `subtree` ms of work (itself included), below a chain of `chain` ms, at place `key`. */
  private treeTask(subtree: number, chain: number, key: number): SimTask {
    let ms = Math.min(subtree, drawEmulatedMs(new Random(key)));
    if (subtree - ms < LEAF_REST_MS) ms = subtree;
    return this.newTask(ms, { w: subtree - ms, c: chain, k: key });
  }

  private childrenOf(task: SimTask): SimTask[] {
    const rest = task.w ?? 0;
    const key = task.k ?? 0;
    if (rest <= 0) return [];
    const random = seededRandom(mix(key, 0x9e3779b9));
    const n =
      rest < 2 * MEAN_MS
        ? 1
        : this.workload === "deep"
          ? random() < DEEP_FORK
            ? 2
            : 1
          : 1 + Math.floor(random() * MAX_CHILDREN);
    const weights = Array.from({ length: n }, () => 0.1 + random());
    const sum = weights.reduce((a, b) => a + b, 0);
    const chain = (task.c ?? 0) + task.ms;
    return weights.map((x, i) => this.treeTask((rest * x) / sum, chain, mix(key, i + 1)));
  }
}

/**
 * The ideal central scheduler (TimedParams `ideal`) on `work`: one queue, newest task first (the pools' default
 * order; with `oldestFirst`, oldest first), that every one of `size` ranks takes from the moment it is free, with
 * messages that cost nothing.
 */
export function runIdeal(work: TimedWork, size: number, clock: VirtualClock, oldestFirst = false): void {
  const queue: SimTask[] = work.initial.flat();
  let head = 0;
  let free = size;
  const fill = () => {
    for (; free > 0 && queue.length > head; free--) {
      const task = (oldestFirst ? queue[head++] : queue.pop()) as SimTask;
      clock.at(clock.now + task.ms, () => {
        const children = work.run(task);
        work.lastTaskMs = clock.now;
        free++;
        if (children !== undefined) queue.push(...children);
        fill();
      });
    }
  };
  fill();
  while (clock.step(Number.POSITIVE_INFINITY));
}

/** A 32-bit hash of two integers (murmur3's finalizer over their mix). */
function mix(a: number, b: number): number {
  let h = Math.imul(a ^ Math.imul(b, 0x85ebca6b), 0xcc9e2d51) ^ (b >>> 7);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
