import { SUB_CONTEXTS } from "./contexts.ts";
import type { Router } from "./router.ts";
import type { SubScope } from "./split.ts";
import { onShrunk } from "../control/deaths.ts";
import { report } from "../control/report.ts";

/**
 * World#shrink under `workpool launch`: the launcher decides who survives. Each rank asks it (its N-th shrink,
 * with its first free context), and once every rank still alive has asked, it answers all of them alike: the
 * ranks dead so far and the block of the new communicator (lib/control/deaths.ts, launcher/shrink.ts). So every
 * survivor makes a communicator of the same ranks, whatever deaths it had heard of when it asked.
 */

/** The launcher's answer to one shrink: the world ranks dead, and the first context of the new block. */
export interface ShrinkAnswer {
  readonly dead: readonly number[];
  readonly base: number;
}

/** Asks the launcher for this process's next shrink; resolves to its answer. */
export function askShrink(router: Router): Promise<ShrinkAnswer> {
  const n = ++router.shrinks;
  const answer = new Promise<ShrinkAnswer>((resolve) => {
    // An answer already delivered is replayed inside onShrunk, before it returns the remover.
    const sub: { off?: () => void; done?: boolean } = {};
    sub.off = onShrunk((k, dead, base) => {
      if (k !== n || sub.done) return;
      sub.done = true;
      sub.off?.();
      resolve({ dead, base });
    });
    if (sub.done) sub.off();
  });
  report({ t: "shrink", n, b: router.nextBlock });
  return answer;
}

/**
 * The scope here of the communicator `answer` makes of a world of `size` ranks, this process being world rank
 * `rank`: every rank not dead, in world order; the process's first free context moves past its block.
 */
export function survivorScope(router: Router, answer: ShrinkAnswer, size: number, rank: number): SubScope {
  const gone = new Set(answer.dead);
  const members: number[] = [];
  for (let r = 0; r < size; r++) if (!gone.has(r)) members.push(r);
  router.nextBlock = Math.max(router.nextBlock, answer.base + SUB_CONTEXTS);
  return { router, members, rank: members.indexOf(rank), base: answer.base };
}
