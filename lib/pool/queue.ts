/**
 * The task queue every pool mode uses: higher priority first, FIFO among equal priorities.
 * Priority-0 tasks (the common case) live in a plain FIFO ring; other priorities in a binary heap ordered
 * by (priority desc, arrival asc). `pop` takes from the heap while its top outranks priority 0.
 */
export class TaskQueue<T> {
  private fifo: T[] = [];
  private head = 0;
  private heapTasks: T[] = [];
  private heapPrio: number[] = [];
  private heapSeq: number[] = [];
  private seq = 0;

  get size(): number {
    return this.fifo.length - this.head + this.heapTasks.length;
  }

  push(task: T, priority = 0): void {
    if (priority === 0) {
      this.fifo.push(task);
      return;
    }
    const tasks = this.heapTasks;
    const prio = this.heapPrio;
    const seqs = this.heapSeq;
    let i = tasks.length;
    const s = this.seq++;
    tasks.push(task);
    prio.push(priority);
    seqs.push(s);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(priority, s, prio[parent] as number, seqs[parent] as number)) break;
      tasks[i] = tasks[parent] as T;
      prio[i] = prio[parent] as number;
      seqs[i] = seqs[parent] as number;
      i = parent;
    }
    tasks[i] = task;
    prio[i] = priority;
    seqs[i] = s;
  }

  private before(pa: number, sa: number, pb: number, sb: number): boolean {
    return pa > pb || (pa === pb && sa < sb);
  }

  /** Priority of the task `pop` would return, or undefined when empty. */
  peekPriority(): number | undefined {
    const top = this.heapPrio[0];
    if (this.head < this.fifo.length && (top === undefined || top <= 0)) return 0;
    return top;
  }

  pop(): T | undefined {
    const top = this.heapPrio[0];
    if (this.head < this.fifo.length && (top === undefined || top <= 0)) {
      const task = this.fifo[this.head] as T;
      this.fifo[this.head++] = undefined as T;
      if (this.head === this.fifo.length) {
        this.fifo = [];
        this.head = 0;
      } else if (this.head >= 4096 && this.head * 2 >= this.fifo.length) {
        this.fifo = this.fifo.slice(this.head);
        this.head = 0;
      }
      return task;
    }
    return top === undefined ? undefined : this.popHeap();
  }

  /** Removes up to `n` tasks in pop order and appends them (and their priorities) to the arrays given. */
  popInto(n: number, tasks: T[], priorities: number[]): void {
    for (let k = 0; k < n; k++) {
      const p = this.peekPriority();
      if (p === undefined) return;
      tasks.push(this.pop() as T);
      priorities.push(p);
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
        if (r < n && this.before(prio[r] as number, seqs[r] as number, prio[l] as number, seqs[l] as number)) c = r;
        if (!this.before(prio[c] as number, seqs[c] as number, lastPrio, lastSeq)) break;
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
