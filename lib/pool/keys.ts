/**
 * Locality keys (`put(task, { key })`): tasks with the same key use the same data (the frame pair of a block
 * matching strip), so the rank that runs one of them has paid for loading that data, and the next one with the
 * same key costs less there than anywhere else. A distributed pool moves tasks with this in mind (queue.ts
 * `give`, docs/distributed.md "Task selection"): whole groups of one key, the keys the receiver ran recently
 * first, the keys this rank ran recently last.
 */

/** A locality key: tasks with the same key (compared with `===`; NaN is refused) use the same data. */
export type TaskKey = string | number;

/** How many distinct keys a rank remembers having run: about as many as an app keeps data objects for. */
export const RECENT_KEYS = 4;

/**
 * The last RECENT_KEYS distinct keys of tasks this rank ran, most recent first. Noting the key just noted
 * again (a run of tasks with one key, the common case) costs one comparison.
 */
export class RecentKeys {
  private readonly keys: TaskKey[] = [];

  get size(): number {
    return this.keys.length;
  }

  /** A task with `key` is about to run on this rank. */
  note(key: TaskKey): void {
    const keys = this.keys;
    if (keys[0] === key) return;
    const i = keys.indexOf(key);
    if (i >= 0) keys.splice(i, 1);
    else if (keys.length === RECENT_KEYS) keys.pop();
    keys.unshift(key);
  }

  /** Where `key` is in the list (0 = most recent), or -1 if it is not there. */
  indexOf(key: TaskKey | undefined): number {
    return key === undefined ? -1 : this.keys.indexOf(key);
  }

  /** A copy, most recent first: it can travel in a message while the list changes. */
  list(): TaskKey[] {
    return this.keys.slice();
  }
}

/** True if `value` can be a key: a string, or a number other than NaN. */
export function isTaskKey(value: unknown): value is TaskKey {
  return typeof value === "string" || (typeof value === "number" && !Number.isNaN(value));
}
