import { createRequire } from "node:module";
import { pack } from "../comm/codec.ts";
import type { PendingPut } from "./runtime.ts";

/** How many of a rank's first tasks its digest covers (with their count). */
const DIGEST_TASKS = 16;

/**
 * The digest of the tasks a rank put before a pool's first run: their count and the first DIGEST_TASKS, with
 * their put options. Undefined when there are none (or they cannot be encoded: `put` has refused those).
 */
export function rootsDigest(initial: readonly PendingPut<unknown>[]): string | undefined {
  if (initial.length === 0) return undefined;
  try {
    const head = initial.slice(0, DIGEST_TASKS).map((p) => [p.task, p.priority, p.to ?? null, p.key ?? null]);
    // node:crypto is loaded here, by the ranks that put tasks before a first run, not by every rank at its start.
    const { createHash } = createRequire(import.meta.url)("node:crypto") as typeof import("node:crypto");
    return `${initial.length}:${createHash("sha1").update(pack(head)).digest("base64")}`;
  } catch {
    return undefined;
  }
}

/**
 * A common first mistake in SPMD code: every rank runs `pool.put(root)` before the first run, so the root task
 * and everything it spawns run once per rank (fib(20) computed twice on two ranks, status 0). Detected on rank 0
 * of the pool's communicator: every other rank that put tasks before the first run sends it their digest
 * (`rootsDigest`: one small message per rank, once per pool; none from a rank that put nothing, as in the
 * correct `if (world.rank === 0) pool.put(root)`); when all `size` ranks put the same tasks, `warn` is called,
 * once. Ranks putting different tasks (each its own part of the work) are no mistake.
 */
export class SameRootsCheck {
  /** Rank 0's own digest: undefined until its first run starts, null if it put nothing. */
  private mine: string | null | undefined;
  private readonly theirs: string[] = [];
  private decided = false;

  constructor(
    private readonly size: number,
    private readonly warn: (tasks: number) => void,
  ) {}

  /** Rank 0's first run starts, with this digest of what it put before it (undefined: nothing). */
  ownRoots(digest: string | undefined): void {
    this.mine = digest ?? null;
    this.decide();
  }

  /** Another rank's digest arrived. */
  otherRoots(digest: string): void {
    if (this.decided) return;
    this.theirs.push(digest);
    this.decide();
  }

  private decide(): void {
    if (this.decided || this.mine === undefined) return;
    const mine = this.mine;
    if (mine === null || this.theirs.some((d) => d !== mine)) {
      this.decided = true;
    } else if (this.theirs.length === this.size - 1) {
      this.decided = true;
      this.warn(Number(mine.slice(0, mine.indexOf(":"))));
    }
    if (this.decided) this.theirs.length = 0;
  }
}
