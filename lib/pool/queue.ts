/**
 * In what order a rank runs its own queued tasks of equal priority: `lifo` (newest first, depth-first: a
 * tree is walked like a plain loop with a stack, and memory stays bounded by depth x branching) or `fifo`
 * (oldest first, breadth-first). Work that leaves a rank is always taken from the oldest end (see `give`).
 */
export type TaskOrder = "lifo" | "fifo";

const INITIAL_CAPACITY = 16;

/**
 * The task queue of every pool mode: higher priority first; among equal priorities newest first (`lifo`) or
 * oldest first (`fifo`).
 *
 * Priority-0 tasks (the common case) live in a double-ended ring buffer: `push` adds at the new end, `pop`
 * takes from the new end (lifo) or the old end (fifo), and `give` (work leaving this rank: a steal, a push, a
 * surplus returned to a coordinator) takes from the old end, where a tree's big subtrees are (Cilk, X10 GLB).
 * Other priorities live in a binary heap ordered by (priority desc, arrival asc or desc by order).
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
  private seq = 0;
  private readonly lifo: boolean;

  constructor(order: TaskOrder = "lifo") {
    this.lifo = order === "lifo";
  }

  get size(): number {
    return this.tail - this.head + this.heapTasks.length;
  }

  push(task: T, priority = 0): void {
    if (priority === 0) {
      if (this.tail - this.head > this.mask) this.grow();
      this.ring[this.tail++ & this.mask] = task;
      return;
    }
    const tasks = this.heapTasks;
    const prio = this.heapPrio;
    const seqs = this.heapSeq;
    let i = tasks.length;
    const s = this.lifo ? -this.seq++ : this.seq++;
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
    return top === undefined ? undefined : this.popHeap();
  }

  private takeNewest(): T {
    const i = --this.tail & this.mask;
    const task = this.ring[i] as T;
    this.ring[i] = undefined;
    return task;
  }

  private takeOldest(): T {
    const i = this.head++ & this.mask;
    const task = this.ring[i] as T;
    this.ring[i] = undefined;
    return task;
  }

  /**
   * Removes up to `n` tasks to hand to another rank, appending them (and their priorities) to the arrays
   * given: positive priorities first (they are due first anywhere), then priority 0 from the oldest end (in a
   * tree, the roots of the biggest subtrees; appended oldest first, so the receiver, pushing them in order,
   * keeps them oldest at its own old end), then negative priorities.
   */
  give(n: number, tasks: T[], priorities: number[]): void {
    for (let k = 0; k < n; k++) {
      const top = this.heapPrio[0];
      if (top !== undefined && (top > 0 || this.tail === this.head)) {
        priorities.push(top);
        tasks.push(this.popHeap());
      } else if (this.tail > this.head) {
        priorities.push(0);
        tasks.push(this.takeOldest());
      } else return;
    }
  }

  private popHeap(): T {
    const tasks = this.heapTasks;
    const prio = this.heapPrio;
    const seqs = this.heapSeq;
    const out = tasks[0] as T;
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

/** Heap order: higher priority first, then smaller sequence (lifo stores sequences negated: newest first). */
function before(pa: number, sa: number, pb: number, sb: number): boolean {
  return pa > pb || (pa === pb && sa < sb);
}
