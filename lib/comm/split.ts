import { describe, InvalidArgumentError } from "../errors.ts";
import type { CollectiveChannel, CollectiveOptions } from "./collectives.ts";
import * as coll from "./collectives.ts";
import { CLOSE_CONTEXT, SUB_CONTEXTS } from "./contexts.ts";
import type { Router } from "./router.ts";

/**
 * MPI_Comm_split, worked out over the parent communicator's collective channel (World#split makes the new
 * communicator in the scope `runSplit` gives it).
 *
 * One allgather of (color, key, first free context of the member's process); then every member works out
 * the same answer by itself:
 * - the members of each color, ordered by key, then by parent rank;
 * - the colors in increasing order, the i-th given the i-th block of SUB_CONTEXTS contexts from the largest
 *   first free context over all members (so each group has contexts, and pool names, of its own);
 * - the new first free context of every member's process: past every block handed out.
 * Any two communicators a process belongs to were both made by splits it took part in, one after the other
 * (World#split runs one at a time per process), and the later one's blocks start past the earlier one's, so
 * their contexts differ; two ranks of one communicator agree on its block, having computed it from the same
 * allgather. That is all message matching needs: a message only ever goes to a member of the communicator it
 * was sent in.
 */

/** @internal How a communicator made by `split` (or `shrink`) sits in its process. */
export interface SubScope {
  readonly router: Router;
  /** The world rank of each of its ranks. */
  readonly members: readonly number[];
  /** This process's rank in it. */
  readonly rank: number;
  /** The first context of its block (SUB_CONTEXTS long). */
  readonly base: number;
}

/** The largest color, as in MPI (non-negative int). */
const MAX_COLOR = 2 ** 31 - 1;

export interface SplitPlan {
  /** The parent ranks of this rank's new communicator, in their new rank order; undefined for color undefined. */
  readonly members: number[] | undefined;
  /** The first context of its block. */
  readonly base: number;
  /** The first context no communicator owns, on the process of every member of the parent, after the split. */
  readonly nextBlock: number;
}

/** Throws InvalidArgumentError, naming the call and the value, for a color or key split does not take. */
export function checkSplitArguments(color: unknown, key: unknown): void {
  if (color !== undefined && (!Number.isInteger(color) || (color as number) < 0 || (color as number) > MAX_COLOR)) {
    throw new InvalidArgumentError(
      `split: color must be an integer in 0..${MAX_COLOR}, or undefined to join no group; got ${describe(color)}`,
    );
  }
  if (!Number.isSafeInteger(key)) {
    throw new InvalidArgumentError(`split: key must be a safe integer; got ${describe(key)}`);
  }
}

export async function planSplit(
  ch: CollectiveChannel,
  color: number | undefined,
  key: number,
  nextBlock: number,
  opts: CollectiveOptions = {},
): Promise<SplitPlan> {
  // -1 stands for undefined on the wire (colors are non-negative).
  const all = await coll.allgather<[number, number, number]>(ch, [color ?? -1, key, nextBlock], opts);
  let first = 0;
  const colors = new Set<number>();
  for (const [c, , free] of all) {
    if (c !== -1) colors.add(c);
    first = Math.max(first, free);
  }
  const ordered = [...colors].sort((a, b) => a - b);
  const end = first + ordered.length * SUB_CONTEXTS;
  if (end > CLOSE_CONTEXT) {
    throw new InvalidArgumentError(
      `split: no message contexts left for ${ordered.length} more communicator${ordered.length === 1 ? "" : "s"} ` +
        `(a job can make about ${Math.floor(CLOSE_CONTEXT / SUB_CONTEXTS)} in all)`,
    );
  }
  if (color === undefined) return { members: undefined, base: 0, nextBlock: end };
  const members = all
    .map(([c, k], r) => ({ c, k, r }))
    .filter((m) => m.c === color)
    .sort((a, b) => a.k - b.k || a.r - b.r)
    .map((m) => m.r);
  return { members, base: first + ordered.indexOf(color) * SUB_CONTEXTS, nextBlock: end };
}

/**
 * Splits a communicator (World#split) on this process: its rank `rank` gives `color` and `key`, `ch` is its
 * collective channel and `parent` its members' world ranks (undefined for the world). One split at a time per
 * process (Router#splitting: two at once could be given the same block); the process's first free context moves
 * past the new blocks. Resolves to the new communicator, made by `make` from its scope here while the split
 * still holds the process, or to undefined for color undefined.
 */
export async function runSplit<C>(
  router: Router,
  ch: CollectiveChannel,
  rank: number,
  parent: readonly number[] | undefined,
  color: number | undefined,
  key: number,
  opts: CollectiveOptions | undefined,
  make: (scope: SubScope) => C,
): Promise<C | undefined> {
  checkSplitArguments(color, key);
  if (router.splitting) {
    throw new InvalidArgumentError(
      "split: another split is running on this process; split one communicator at a time (await each split)",
    );
  }
  router.splitting = true;
  try {
    const plan = await planSplit(ch, color, key, router.nextBlock, opts);
    router.nextBlock = plan.nextBlock;
    if (!plan.members) return undefined;
    return make({
      router,
      members: plan.members.map((r) => (parent ? (parent[r] as number) : r)),
      rank: plan.members.indexOf(rank),
      base: plan.base,
    });
  } finally {
    router.splitting = false;
  }
}
