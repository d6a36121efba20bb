import type { RecentKeys, TaskKey } from "./keys.ts";

/**
 * In what order a rank runs its own queued tasks of equal priority: `lifo` (newest first, depth-first: a
 * tree is walked like a plain loop with a stack, and memory stays bounded by depth x branching) or `fifo`
 * (oldest first, breadth-first). Work that leaves a rank is taken from the oldest end: in a lifo queue every
 * other task there, in a fifo queue the oldest in order (see `give`).
 */
export type TaskOrder = "lifo" | "fifo";

const INITIAL_CAPACITY = 16;
/** Keyed `give` looks at the oldest 2n + this many priority-0 tasks to give n (see `giveRing`). */
const WINDOW_EXTRA = 64;

/**
 * The task queue of every pool mode: higher priority first; among equal priorities newest first (`lifo`) or
 * oldest first (`fifo`).
 *
 * Priority-0 tasks (the common case) live in a double-ended ring buffer: `push` adds at the new end, `pop`
 * takes from the new end (lifo) or the old end (fifo), and `give` (work leaving this rank: a steal, a push, a
 * surplus returned to a coordinator) takes from the old end, where a tree's big subtrees are (Cilk, X10 GLB):
 * alternately in a lifo queue, in order in a fifo one (`giveAlternate`).
 * Other priorities live in a binary heap ordered by (priority desc, arrival asc or desc by order).
 *
 * Tasks may carry a locality key (keys.ts). Keys live beside the tasks, in a parallel ring and a map by heap
 * sequence, both made on the first keyed push: a queue that never sees a key pays one branch per push and pop.
 * A keyed queue notes the key of every task it pops (to run) in `recent`, and `give` hands out whole groups of
 * one key (see `give`).
 */
export class TaskQueue<T> {
  private ring: (T | undefined)[] = new Array<T | undefined>(INITIAL_CAPACITY);
  private mask = INITIAL_CAPACITY - 1;
  /** Index of the oldest task, and one past the newest (both unbounded; taken modulo the capacity). */
  private head = 0;
  private tail = 0;
  private heapTasks: T[] = [];
  private heapPrio: number[] = [];
  private heapSeq: number[] = [];
  /** Tasks in the heap of positive priority. */
  private positives = 0;
  private seq = 0;
  private readonly lifo: boolean;
  /** `dealing`: a fifo queue that gives its oldest in order (`giveAlternate`). */
  private readonly inOrder: boolean;
  /** Keys of the ring's tasks, slot by slot; made on the first keyed push. */
  private ringKeys: (TaskKey | undefined)[] | undefined;
  /** Keys of the heap's keyed tasks, by heap sequence number; made on the first keyed push. */
  private heapKeys: Map<number, TaskKey> | undefined;

  /**
   * `order`: the pool's (a rank's own tasks), or `dealing` for a queue that hands tasks out in the order they
   * came, oldest first (a coordinator's, and what a worker was dealt): fifo, and it gives its oldest in order, so
   * that one worker runs them as a plain loop would. `recent`: where the keys of the tasks `pop` returns are
   * noted (the rank's recently run keys).
   */
  constructor(
    order: TaskOrder | "dealing" = "lifo",
    private readonly recent?: RecentKeys,
  ) {
    this.lifo = order === "lifo";
    this.inOrder = order === "dealing";
  }

  /** True once a task with a key was pushed: `give` then wants an array for the keys of what it gives. */
  get keyed(): boolean {
    return this.ringKeys !== undefined || this.heapKeys !== undefined;
  }

  get size(): number {
    return this.tail - this.head + this.heapTasks.length;
  }

  /** Adds a task; `key`, if given, is its locality key (keys.ts). */
  push(task: T, priority = 0, key?: TaskKey): void {
    if (priority === 0) {
      if (this.tail - this.head > this.mask) this.grow();
      const at = this.tail++ & this.mask;
      this.ring[at] = task;
      if (this.ringKeys !== undefined) this.ringKeys[at] = key;
      else if (key !== undefined) {
        this.ringKeys = new Array<TaskKey | undefined>(this.mask + 1);
        this.ringKeys[at] = key;
      }
      return;
    }
    const s = this.lifo ? -this.seq++ : this.seq++;
    if (key !== undefined) (this.heapKeys ??= new Map()).set(s, key);
    this.insertHeap(task, priority, s);
  }

  /** Puts `task` into the heap at its place by (priority, sequence). */
  private insertHeap(task: T, priority: number, s: number): void {
    const tasks = this.heapTasks;
    const prio = this.heapPrio;
    const seqs = this.heapSeq;
    let i = tasks.length;
    if (priority > 0) this.positives++;
    tasks.push(task);
    prio.push(priority);
    seqs.push(s);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(priority, s, prio[parent] as number, seqs[parent] as number)) break;
      tasks[i] = tasks[parent] as T;
      prio[i] = prio[parent] as number;
      seqs[i] = seqs[parent] as number;
      i = parent;
    }
    tasks[i] = task;
    prio[i] = priority;
    seqs[i] = s;
  }

  private grow(): void {
    const n = this.tail - this.head;
    const next = new Array<T | undefined>((this.mask + 1) * 2);
    for (let k = 0; k < n; k++) next[k] = this.ring[(this.head + k) & this.mask];
    const keys = this.ringKeys;
    if (keys !== undefined) {
      const nextKeys = new Array<TaskKey | undefined>(next.length);
      for (let k = 0; k < n; k++) nextKeys[k] = keys[(this.head + k) & this.mask];
      this.ringKeys = nextKeys;
    }
    this.ring = next;
    this.mask = next.length - 1;
    this.head = 0;
    this.tail = n;
  }

  /** Priority of the task `pop` would return, or undefined when empty. */
  peekPriority(): number | undefined {
    const top = this.heapPrio[0];
    if (this.tail > this.head && (top === undefined || top <= 0)) return 0;
    return top;
  }

  /** The task to run next: the highest priority, then the newest (lifo) or oldest (fifo). */
  pop(): T | undefined {
    const top = this.heapPrio[0];
    if (this.tail > this.head && (top === undefined || top <= 0)) {
      return this.lifo ? this.takeNewest() : this.takeOldest();
    }
    if (top === undefined) return undefined;
    if (this.heapKeys !== undefined) this.ran(this.takeHeapKey());
    return this.popHeap();
  }

  private takeNewest(): T {
    const i = --this.tail & this.mask;
    const task = this.ring[i] as T;
    this.ring[i] = undefined;
    if (this.ringKeys !== undefined) this.ran(this.takeRingKey(i));
    return task;
  }

  private takeOldest(): T {
    const i = this.head++ & this.mask;
    const task = this.ring[i] as T;
    this.ring[i] = undefined;
    if (this.ringKeys !== undefined) this.ran(this.takeRingKey(i));
    return task;
  }

  /** A popped task with `key` is about to run here. */
  private ran(key: TaskKey | undefined): void {
    if (key !== undefined) this.recent?.note(key);
  }

  private takeRingKey(slot: number): TaskKey | undefined {
    const keys = this.ringKeys as (TaskKey | undefined)[];
    const key = keys[slot];
    keys[slot] = undefined;
    return key;
  }

  /** The key of the heap's top task (about to be popped), forgotten. */
  private takeHeapKey(): TaskKey | undefined {
    const map = this.heapKeys as Map<number, TaskKey>;
    const s = this.heapSeq[0] as number;
    const key = map.get(s);
    if (key !== undefined) map.delete(s);
    return key;
  }

  /**
   * Removes up to `n` tasks to hand to another rank, appending them (and their priorities) to the arrays
   * given: positive priorities first (they are due first anywhere), then priority 0 from the oldest end (in a
   * tree, the roots of the biggest subtrees; alternately in a lifo queue, `giveAlternate`; appended oldest first,
   * so the receiver, pushing them in order, keeps them oldest at its own old end), then negative priorities.
   *
   * In a keyed queue (`keyed`), the tasks' keys are appended to `keys` (null for a task without one; without
   * `keys` they are dropped), and the priority-0 tasks are chosen by key among the oldest 2n + 64 (`giveRing`):
   * whole groups of one key; the keys in `prefer` first (the receiver's recently run keys, most recent first),
   * then other keys oldest first, then the keys this rank ran recently (`recent`), least recent first. Cost:
   * O(n) per call, whatever the queue's size.
   */
  give(n: number, tasks: T[], priorities: number[], keys?: (TaskKey | null)[], prefer?: readonly unknown[]): void {
    if (this.ringKeys !== undefined || this.heapKeys !== undefined) {
      this.giveKeyed(n, tasks, priorities, keys, prefer);
      return;
    }
    let k = this.givePositive(n, tasks, priorities);
    k += this.giveAlternate(n - k, tasks, priorities, undefined);
    for (; k < n && this.heapTasks.length > 0; k++) {
      priorities.push(this.heapPrio[0] as number);
      tasks.push(this.popHeap());
    }
  }

  /**
   * Gives up to `n` tasks of positive priority, highest first; returns how many. In a lifo queue the two sides
   * alternate in priority order, as `giveAlternate` does in the ring: when at most half of them leave, every other
   * one of the highest 2n (the highest first); when more, this rank keeps every other one of its lowest 2k, where
   * k is what it keeps. When an app puts tasks with their expected times as priorities (the longest first,
   * anywhere), the highest half held most of the work, and a thief of half got it (2 ranks, 40 tasks of 20-300 ms:
   * 27 and 13 tasks, 1.07-1.14x the bound). A fifo queue gives them in order.
   */
  private givePositive(n: number, tasks: T[], priorities: number[]): number {
    const out = Math.min(Math.max(0, Math.ceil(n)), this.positives);
    if (!(out > 0)) return 0;
    const keep = this.positives - out;
    // Positions (0: the highest) in the first `span` positives where the two alternate; above `from` all leave.
    const alternating = this.lifo ? 2 * Math.min(out, keep) : 0;
    const from = out <= keep ? 0 : out - keep;
    const kept: [T, number, number][] = [];
    for (let i = 0, k = 0; k < out; i++) {
      const p = this.heapPrio[0] as number;
      const s = this.heapSeq[0] as number;
      const task = this.popHeap();
      const j = i - from;
      if (j >= 0 && j < alternating && j % 2 === 1) kept.push([task, p, s]);
      else {
        tasks.push(task);
        priorities.push(p);
        k++;
      }
    }
    for (const [task, p, s] of kept) this.insertHeap(task, p, s);
    return out;
  }

  /**
   * Gives up to `m` priority-0 tasks of the ring, appended oldest first (with null keys to `keys`, if given);
   * returns how many. The smaller side alternates with the other over a window at one end: when at most half
   * leave, every other one of the oldest 2m (the oldest first) leaves; when more than half leave, this rank keeps
   * every other one of the 2k it runs next (k: what it keeps; the newest in a lifo queue, the oldest in a fifo
   * one), and everything else leaves. A `dealing` queue gives its oldest m, in order.
   *
   * Why alternately: in a tree walked newest first, the queue holds one sibling subtree per level, oldest the
   * biggest, each about half the one before it. Half of the tasks from the oldest end took nearly all of the
   * work: a thief of a binary tree's queue left its victim a few small subtrees, the victim was idle soon after
   * and stole it back (2 ranks, a binary tree of 8 million tasks: 57 steals each way and 17 to 25% of each rank
   * idle; alternately, 4 steals each way). Alternately the thief of half gets about two thirds of the work (the
   * oldest task, half of it, then every other one), and tasks of equal size still go half and half. A rank that
   * keeps a small share keeps its newest tasks, the smallest, and the one it was about to run.
   */
  private giveAlternate(m: number, tasks: T[], priorities: number[], keys: (TaskKey | null)[] | undefined): number {
    const { ring, mask, head, tail } = this;
    const size = tail - head;
    // (A count that is not a whole number rounds up, as a loop of `k < m` would; NaN gives nothing.)
    const n = Math.min(Math.ceil(m), size);
    if (!(n > 0)) return 0;
    const out = (i: number) => {
      tasks.push(ring[i & mask] as T);
      priorities.push(0);
      keys?.push(null);
    };
    // The window where the two sides alternate: its even ones leave (the oldest first), its odd ones stay, closing
    // up at its top, in order. In a lifo queue, the oldest 2n when at most half leave (nothing older leaves,
    // nothing newer moves), else the newest 2k, and everything older leaves. A fifo queue runs its oldest first,
    // so its window is the oldest 2 x min(n, k), and when more than half leave everything newer leaves too: thief
    // and victim each run every other task in the order of the puts, and that order goes on across both. (Given
    // its oldest n in order, a thief of half ran 1, 2, 3 ... while its victim jumped to 200: a search for the
    // first solution in put order, found in chunk 18, gained nothing on 2 ranks.) A `dealing` queue gives its
    // oldest in order.
    if (this.inOrder) {
      for (let j = head; j < head + n; j++) {
        out(j);
        ring[j & mask] = undefined;
      }
      this.head = head + n;
      return n;
    }
    const kept = size - n;
    const low = this.lifo && n > kept ? tail - 2 * kept : head;
    const top = low + 2 * Math.min(n, kept);
    const newer = !this.lifo && n > kept;
    for (let j = head; j < low; j++) out(j);
    for (let j = low; j < top; j += 2) out(j);
    if (newer) for (let j = top; j < tail; j++) out(j);
    let write = top;
    for (let j = top - 1; j > low; j -= 2) ring[--write & mask] = ring[j & mask];
    for (let j = head; j < write; j++) ring[j & mask] = undefined;
    if (newer) {
      for (let j = top; j < tail; j++) ring[j & mask] = undefined;
      this.tail = top;
    }
    this.head = write;
    return n;
  }

  private giveKeyed(
    n: number,
    tasks: T[],
    priorities: number[],
    keys: (TaskKey | null)[] | undefined,
    prefer: readonly unknown[] | undefined,
  ): void {
    let k = 0;
    // Positive priorities first, then priority 0 by key, then negative priorities (as the plain path).
    for (let top = this.heapPrio[0]; k < n && top !== undefined && top > 0; top = this.heapPrio[0], k++) {
      this.giveHeapTop(tasks, priorities, keys);
    }
    k += this.giveRing(n - k, tasks, priorities, keys, prefer);
    for (; k < n && this.heapTasks.length > 0; k++) this.giveHeapTop(tasks, priorities, keys);
  }

  private giveHeapTop(tasks: T[], priorities: number[], keys: (TaskKey | null)[] | undefined): void {
    const key = this.heapKeys === undefined ? undefined : this.takeHeapKey();
    priorities.push(this.heapPrio[0] as number);
    tasks.push(this.popHeap());
    keys?.push(key ?? null);
  }

  /**
   * Gives up to `m` priority-0 tasks chosen by key from the oldest `w` = min(size, 2m + 64): groups (the tasks
   * of one key in the window; tasks without a key form one group) are taken in the order `give` describes,
   * each whole, or as much as is still wanted. A group that would be split is skipped once half of `m` is
   * chosen (so a class is split only to give a useful share), but tasks without a key are split freely. The
   * chosen tasks leave in their queue order; the rest of the window closes up at the old end, in order.
   * Returns how many it gave (at least min(m, size): the window holds enough).
   */
  private giveRing(
    m: number,
    tasks: T[],
    priorities: number[],
    keys: (TaskKey | null)[] | undefined,
    prefer: readonly unknown[] | undefined,
  ): number {
    const size = this.tail - this.head;
    if (m <= 0 || size === 0) return 0;
    const ringKeys = this.ringKeys;
    if (ringKeys === undefined) return this.giveAlternate(m, tasks, priorities, keys);
    const { ring, mask, head } = this;
    const w = Math.min(size, 2 * m + WINDOW_EXTRA);
    // The groups in the window, oldest first (a Map keeps insertion order), with their sizes.
    const counts = new Map<TaskKey | undefined, number>();
    for (let j = head; j < head + w; j++) {
      const key = ringKeys[j & mask];
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    // The order to take them in: the receiver's recent keys, other keys, this rank's recent keys.
    const order: (TaskKey | undefined)[] = [];
    const preferred = new Set<unknown>();
    if (prefer !== undefined) {
      for (const key of prefer) {
        if (counts.has(key as TaskKey) && !preferred.has(key)) {
          preferred.add(key);
          order.push(key as TaskKey);
        }
      }
    }
    const recent = this.recent;
    const mine: (TaskKey | undefined)[] = [];
    for (const key of counts.keys()) {
      if (preferred.has(key)) continue;
      if (recent !== undefined && recent.indexOf(key) >= 0) mine.push(key);
      else order.push(key);
    }
    // Least recently run first: the data of the most recent is the likeliest to be still held here.
    if (recent !== undefined) mine.sort((a, b) => recent.indexOf(b) - recent.indexOf(a));
    order.push(...mine);
    // How many of each group to take: `take` of its oldest, so `skip` of its newest stay.
    const chosen = new Map<TaskKey | undefined, { skip: number; take: number }>();
    // The group the window cuts may hold more tasks beyond it: it never counts as fitting whole.
    const cut = w < size ? ringKeys[(head + w - 1) & mask] : undefined;
    let left = m;
    for (const key of order) {
      if (left === 0) break;
      const count = counts.get(key) as number;
      const take = Math.min(count, left);
      const whole = take === count && (key !== cut || cut === undefined);
      if (!whole && key !== undefined && m - left >= (m + 1) >> 1) continue;
      chosen.set(key, { skip: count - take, take });
      left -= take;
    }
    // From the newest end of the window back: chosen tasks out (reversed below), the rest close up at the back.
    const first = tasks.length;
    let write = head + w;
    for (let j = head + w - 1; j >= head; j--) {
      const i = j & mask;
      const key = ringKeys[i];
      const c = chosen.get(key);
      if (c !== undefined && c.skip === 0 && c.take > 0) {
        c.take--;
        tasks.push(ring[i] as T);
        priorities.push(0);
        keys?.push(key ?? null);
      } else {
        if (c !== undefined && c.skip > 0) c.skip--;
        write--;
        if (write !== j) {
          const to = write & mask;
          ring[to] = ring[i];
          ringKeys[to] = key;
        }
      }
      if (write !== j) {
        ring[i] = undefined;
        ringKeys[i] = undefined;
      }
    }
    this.head = write;
    const given = tasks.length - first;
    reverse(tasks, first);
    reverse(priorities, priorities.length - given);
    if (keys !== undefined) reverse(keys, keys.length - given);
    return given;
  }

  private popHeap(): T {
    const tasks = this.heapTasks;
    const prio = this.heapPrio;
    const seqs = this.heapSeq;
    const out = tasks[0] as T;
    if ((prio[0] as number) > 0) this.positives--;
    const lastTask = tasks.pop() as T;
    const lastPrio = prio.pop() as number;
    const lastSeq = seqs.pop() as number;
    const n = tasks.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        let c = l;
        if (r < n && before(prio[r] as number, seqs[r] as number, prio[l] as number, seqs[l] as number)) c = r;
        if (!before(prio[c] as number, seqs[c] as number, lastPrio, lastSeq)) break;
        tasks[i] = tasks[c] as T;
        prio[i] = prio[c] as number;
        seqs[i] = seqs[c] as number;
        i = c;
      }
      tasks[i] = lastTask;
      prio[i] = lastPrio;
      seqs[i] = lastSeq;
    }
    return out;
  }
}

/** Reverses `a[from..]` in place. */
function reverse(a: unknown[], from: number): void {
  for (let i = from, j = a.length - 1; i < j; i++, j--) {
    const x = a[i];
    a[i] = a[j];
    a[j] = x;
  }
}

/** Heap order: higher priority first, then smaller sequence (lifo stores sequences negated: newest first). */
function before(pa: number, sa: number, pb: number, sb: number): boolean {
  return pa > pb || (pa === pb && sa < sb);
}
