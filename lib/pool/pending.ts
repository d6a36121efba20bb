/**
 * The tasks put on a pool before its run (pool.ts), and the checks every put goes through. A task put is a
 * promise to run it: a pool that holds puts no run has taken is known, and if the process ends with some still
 * waiting (no `run` after the puts, on this rank) it fails with a message that names the pool, instead of
 * dropping them silently and exiting 0.
 */
import { findUnsendable, where } from "../comm/unsendable.ts";
import { ConfigError, describe, EncodeError, InvalidArgumentError } from "../errors.ts";
import { isTaskKey } from "./keys.ts";
import type { PoolMode } from "./options.ts";
import type { PendingPut } from "./runtime.ts";
import type { PutOptions } from "./types.ts";

/** What the exit check names: the pool and the rank it is on. */
interface PendingOwner {
  readonly name: string;
  readonly rank: number;
}

/** A pool's puts waiting for its next run, in the order put. */
export class PendingPuts<T> {
  private puts: PendingPut<T>[] = [];

  constructor(private readonly owner: PendingOwner) {}

  get length(): number {
    return this.puts.length;
  }

  add(put: PendingPut<T>): void {
    if (this.puts.push(put) === 1) awaitRun(this as PendingPuts<unknown>);
  }

  /** Every put waiting, for the run that takes them; none is left. */
  take(): PendingPut<T>[] {
    const taken = this.puts;
    this.puts = [];
    unrun.delete(this as PendingPuts<unknown>);
    return taken;
  }

  /** `pool1 holds 3 tasks`, for the exit check. */
  describe(): string {
    const n = this.puts.length;
    return `${this.owner.name} holds ${n} task${n === 1 ? "" : "s"}`;
  }

  get rank(): number {
    return this.owner.rank;
  }
}

/**
 * Checks a put's options (`priority`, `to`, `key`) on a pool of `mode` over `size` ranks; throws
 * InvalidArgumentError, or ConfigError for an option the pool's mode has not, naming the option.
 */
export function checkPutOptions(options: PutOptions | undefined, mode: PoolMode, size: number): void {
  const priority = options?.priority ?? 0;
  if (typeof priority !== "number" || !Number.isFinite(priority)) {
    throw new InvalidArgumentError(`put: option \`priority\` must be a finite number; got ${describe(priority)}`);
  }
  const to = options?.to;
  if (to !== undefined) {
    if (mode !== "distributed") {
      throw new ConfigError(`put: option \`to\` applies to distributed pools only; this pool is ${mode}`);
    }
    if (!Number.isInteger(to) || to < 0 || to >= size) {
      throw new InvalidArgumentError(`put: option \`to\` must be a rank in 0..${size - 1}; got ${describe(to)}`);
    }
  }
  const key = options?.key;
  if (key !== undefined && !isTaskKey(key)) {
    throw new InvalidArgumentError(`put: option \`key\` must be a string or a number (not NaN); got ${describe(key)}`);
  }
}

/**
 * The error for a task that cannot travel to another rank as it is, naming the app's own path to the bad part
 * (`task.f is a function`), as `put` throws it on any number of ranks.
 */
export function untravelled(task: unknown): EncodeError {
  const found = findUnsendable(task, true);
  const what = found ? `${where("task", found.path)} ${found.what}` : "task cannot be encoded";
  return new EncodeError(
    `put: ${what}; a task may run on any rank, so put plain data and keep functions and classes in the handler`,
  );
}

/** The pools' pending puts that no run has taken. */
const unrun = new Set<PendingPuts<unknown>>();
let exitCheck = false;

function awaitRun(pending: PendingPuts<unknown>): void {
  unrun.add(pending);
  if (exitCheck) return;
  exitCheck = true;
  process.on("exit", (code) => {
    if (unrun.size === 0 || code !== 0) return;
    const pools = [...unrun].map((p) => p.describe());
    process.stderr.write(
      `workpool: rank ${[...unrun][0]?.rank}: tasks were put and never run (${pools.join("; ")}): ` +
        "call pool.run(handler) on every rank after the puts\n",
    );
    process.exitCode = 1;
  });
}
