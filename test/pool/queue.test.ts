/**
 * TaskQueue in this process: pop order among equal priorities (lifo, fifo), priorities first in both orders
 * (the heap's ties included), `give` (positive priorities, then priority 0 alternately from the oldest end, then
 * negative priorities; what a thief of a tree's queue gets), the ring buffer growing while its head has wrapped, sizes; and a seeded randomized comparison
 * against a naive model.
 */
import test from "ava";
import { ORDERS } from "../../lib/pool/config.ts";
import { type TaskOrder, TaskQueue } from "../../lib/pool/queue.ts";
import { seededRandom as prng } from "../../lib/pool/partner/random.ts";

/** Pops until empty. */
function drain<T>(q: TaskQueue<T>): T[] {
  const out: T[] = [];
  for (let t = q.pop(); t !== undefined; t = q.pop()) out.push(t);
  return out;
}

/** Calls `give` once and returns what it appended. */
function giveN<T>(q: TaskQueue<T>, n: number): { tasks: T[]; prios: number[] } {
  const tasks: T[] = [];
  const prios: number[] = [];
  q.give(n, tasks, prios);
  return { tasks, prios };
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);

// --- order among equal priorities ---------------------------------------------------------------------------

test("lifo pops priority-0 tasks newest first, fifo oldest first", (t) => {
  for (const order of ORDERS) {
    const q = new TaskQueue<number>(order);
    for (let i = 0; i < 40; i++) q.push(i);
    t.is(q.size, 40, order);
    const expected = order === "lifo" ? range(0, 40).reverse() : range(0, 40);
    t.deepEqual(drain(q), expected, order);
    t.is(q.size, 0, order);
    t.is(q.pop(), undefined, order);
    t.is(q.peekPriority(), undefined, order);
  }
});

test("lifo walks a tree as a plain stack loop does, fifo as a queue loop does", (t) => {
  // Each task puts its children; the pop order must be depth-first (newest child first) or breadth-first.
  const kids = (id: number) => (id < 100 ? [id * 3 + 1, id * 3 + 2, id * 3 + 3].filter((c) => c < 300) : []);
  for (const order of ORDERS) {
    const q = new TaskQueue<number>(order);
    q.push(0);
    const ran: number[] = [];
    for (let id = q.pop(); id !== undefined; id = q.pop()) {
      ran.push(id);
      for (const c of kids(id)) q.push(c);
    }
    const expected: number[] = [];
    const pending = [0];
    while (pending.length > 0) {
      const id = (order === "lifo" ? pending.pop() : pending.shift()) as number;
      expected.push(id);
      pending.push(...kids(id));
    }
    t.is(ran.length, 300, order);
    t.deepEqual(ran, expected, order);
  }
});

test("interleaved pushes and pops keep lifo and fifo order", (t) => {
  const lifo = new TaskQueue<string>("lifo");
  const fifo = new TaskQueue<string>("fifo");
  for (const q of [lifo, fifo]) {
    q.push("a");
    q.push("b");
  }
  t.is(lifo.pop(), "b");
  t.is(fifo.pop(), "a");
  for (const q of [lifo, fifo]) q.push("c");
  t.deepEqual(drain(lifo), ["c", "a"]);
  t.deepEqual(drain(fifo), ["b", "c"]);
});

// --- priorities ---------------------------------------------------------------------------------------------

test("higher priorities pop first in both orders, negatives after priority 0", (t) => {
  for (const order of ORDERS) {
    const q = new TaskQueue<string>(order);
    q.push("zero-1");
    q.push("neg-1", -1);
    q.push("pos-2", 2);
    q.push("zero-2");
    q.push("neg-5", -5);
    q.push("pos-1", 1);
    q.push("pos-0.5", 0.5);
    q.push("neg-0.5", -0.5);
    q.push("zero-3", 0);
    t.is(q.size, 9);
    t.is(q.peekPriority(), 2, order);
    const zeros = order === "lifo" ? ["zero-3", "zero-2", "zero-1"] : ["zero-1", "zero-2", "zero-3"];
    t.deepEqual(drain(q), ["pos-2", "pos-1", "pos-0.5", ...zeros, "neg-0.5", "neg-1", "neg-5"], order);
  }
});

test("peekPriority is the priority of the task pop returns next", (t) => {
  for (const order of ORDERS) {
    const q = new TaskQueue<number>(order);
    t.is(q.peekPriority(), undefined);
    q.push(1, -3);
    t.is(q.peekPriority(), -3, order);
    q.push(2);
    t.is(q.peekPriority(), 0, order);
    q.push(3, 4);
    t.is(q.peekPriority(), 4, order);
    t.is(q.pop(), 3);
    t.is(q.peekPriority(), 0, order);
    t.is(q.pop(), 2);
    t.is(q.peekPriority(), -3, order);
    t.is(q.pop(), 1);
    t.is(q.peekPriority(), undefined, order);
  }
});

test("ties inside the heap: newest first under lifo, oldest first under fifo, for positive and negative", (t) => {
  for (const order of ORDERS) {
    for (const p of [3, -2]) {
      const q = new TaskQueue<number>(order);
      // Interleave other priorities so the heap really reorders.
      for (let i = 0; i < 30; i++) {
        q.push(i, p);
        q.push(100 + i, p + 1);
        q.push(200 + i, p - 1);
      }
      const ran = drain(q);
      const tie = (base: number) => {
        const ids = range(base, base + 30);
        return order === "lifo" ? ids.reverse() : ids;
      };
      t.deepEqual(ran, [...tie(100), ...tie(0), ...tie(200)], `${order}, priority ${p}`);
    }
  }
});

test("a heap filled and drained in mixed order still pops by priority, then by order", (t) => {
  for (const order of ORDERS) {
    const q = new TaskQueue<{ id: number; p: number }>(order);
    for (let i = 0; i < 200; i++) {
      const p = ((i * 7) % 5) - 2;
      q.push({ id: i, p }, p);
    }
    const ran = drain(q);
    t.is(ran.length, 200);
    for (let i = 1; i < ran.length; i++) {
      const a = ran[i - 1] as { id: number; p: number };
      const b = ran[i] as { id: number; p: number };
      const ok = a.p > b.p || (a.p === b.p && (order === "lifo" ? a.id > b.id : a.id < b.id));
      if (!ok) t.fail(`${order}: ${JSON.stringify(a)} popped before ${JSON.stringify(b)}`);
    }
  }
});

// --- give ---------------------------------------------------------------------------------------------------

test("give takes priority-0 tasks from the oldest end, alternately, in a lifo and in a fifo queue", (t) => {
  const lifo = new TaskQueue<number>("lifo");
  for (let i = 0; i < 10; i++) lifo.push(i);
  // At most half: every other one of the oldest 2n.
  t.deepEqual(giveN(lifo, 3), { tasks: [0, 2, 4], prios: [0, 0, 0] });
  t.is(lifo.size, 7);
  // Left: 1 3 5 6 7 8 9. Still at most half.
  t.deepEqual(giveN(lifo, 2), { tasks: [1, 5], prios: [0, 0] });
  t.deepEqual(drain(lifo), [9, 8, 7, 6, 3]);
  // A fifo queue the same way at its oldest end, which it also runs first: thief and victim each go on through
  // every other task of the puts' order; the oldest always leaves first (a coordinator deals from one).
  const fifo = new TaskQueue<number>("fifo");
  for (let i = 0; i < 10; i++) fifo.push(i);
  t.deepEqual(giveN(fifo, 3), { tasks: [0, 2, 4], prios: [0, 0, 0] });
  // Left: 1 3 5 6 7 8 9.
  t.deepEqual(giveN(fifo, 2), { tasks: [1, 5], prios: [0, 0] });
  t.deepEqual(drain(fifo), [3, 6, 7, 8, 9]);
  // A `dealing` queue (a coordinator's, a worker's dealt tasks) hands them out in the order they came.
  const dealing = new TaskQueue<number>("dealing");
  for (let i = 0; i < 10; i++) dealing.push(i);
  t.deepEqual(giveN(dealing, 3), { tasks: [0, 1, 2], prios: [0, 0, 0] });
  t.is(dealing.pop(), 3);
  t.deepEqual(giveN(dealing, 4), { tasks: [4, 5, 6, 7], prios: [0, 0, 0, 0] });
  t.deepEqual(drain(dealing), [8, 9]);
});

test("give of more than half of a fifo queue keeps every other one of its oldest 2k, the oldest next", (t) => {
  const q = new TaskQueue<number>("fifo");
  for (let i = 0; i < 10; i++) q.push(i);
  t.is(q.pop(), 0);
  // 9 left, 5 leave: the victim keeps every other one of the oldest 8 (2, 4, 6, 8), the thief the rest.
  t.deepEqual(giveN(q, 5).tasks, [1, 3, 5, 7, 9]);
  t.deepEqual(drain(q), [2, 4, 6, 8]);
  for (let i = 0; i < 3; i++) q.push(i);
  t.deepEqual(giveN(q, 3).tasks, [0, 1, 2]);
  t.is(q.size, 0);
});

test("give of more than half of a lifo queue keeps every other one of the newest 2k, the newest first", (t) => {
  const q = new TaskQueue<number>("lifo");
  for (let i = 0; i < 10; i++) q.push(i);
  // 7 leave, 3 stay: of the newest 6 (4..9), 9, 7 and 5 stay; everything older leaves.
  t.deepEqual(giveN(q, 7).tasks, [0, 1, 2, 3, 4, 6, 8]);
  t.deepEqual(drain(q), [9, 7, 5]);
});

test("give of a count that is not a whole number rounds it up, and NaN gives nothing: no task lost", (t) => {
  for (const order of ORDERS) {
    const q = new TaskQueue<number>(order);
    for (let i = 0; i < 10; i++) q.push(i);
    t.deepEqual(giveN(q, Number.NaN).tasks, [], order);
    t.is(q.size, 10, order);
    const given = giveN(q, 2.5).tasks;
    t.is(given.length, 3, order);
    const all = [...given, ...drain(q)].sort((a, b) => a - b);
    t.deepEqual(all, range(0, 10), order);
  }
});

test("a thief of a tree's queue gets between half and three quarters of the work, not nearly all of it", (t) => {
  // A binary tree walked newest first: the queue holds one sibling per level, the oldest the biggest subtree.
  for (const levels of [4, 10, 20]) {
    const q = new TaskQueue<number>("lifo");
    for (let level = levels; level >= 1; level--) q.push(2 ** level - 1);
    let total = 0;
    for (let level = 1; level <= levels; level++) total += 2 ** level - 1;
    const work = giveN(q, levels >> 1).tasks.reduce((a, b) => a + b, 0);
    t.true(work / total > 0.5 && work / total < 0.75, `${levels} levels: the thief got ${work} of ${total}`);
  }
});

test("give hands positive priorities first, then the oldest priority 0, then negatives", (t) => {
  for (const order of ORDERS) {
    const q = new TaskQueue<string>(order);
    q.push("z0");
    q.push("n1", -1);
    q.push("p1", 1);
    q.push("z1");
    q.push("p5", 5);
    q.push("n3", -3);
    q.push("z2");
    q.push("p1b", 1);
    const ties = order === "lifo" ? ["p1b", "p1"] : ["p1", "p1b"];
    const all = giveN(q, 100);
    t.deepEqual(all.tasks, ["p5", ...ties, "z0", "z1", "z2", "n1", "n3"], order);
    t.deepEqual(all.prios, [5, 1, 1, 0, 0, 0, -1, -3], order);
    t.is(q.size, 0);
    t.is(q.pop(), undefined);
  }
});

test("positive priorities leave alternately from a lifo queue, in order from a fifo one", (t) => {
  // Priorities as the tasks' expected times: a thief of half gets half the work, not the biggest half.
  const of = (order: TaskOrder, n: number) => {
    const q = new TaskQueue<number>(order);
    for (let p = 1; p <= 10; p++) q.push(p, p);
    const given = giveN(q, n).tasks;
    const kept: number[] = [];
    for (let x = q.pop(); x !== undefined; x = q.pop()) kept.push(x);
    return { given, kept };
  };
  t.deepEqual(of("lifo", 5), { given: [10, 8, 6, 4, 2], kept: [9, 7, 5, 3, 1] });
  t.deepEqual(of("lifo", 7), { given: [10, 9, 8, 7, 6, 4, 2], kept: [5, 3, 1] });
  t.deepEqual(of("lifo", 1), { given: [10], kept: [9, 8, 7, 6, 5, 4, 3, 2, 1] });
  t.deepEqual(of("fifo", 5), { given: [10, 9, 8, 7, 6], kept: [5, 4, 3, 2, 1] });
});

test("give stops at n, leaves the rest in order, appends to the arrays given, and takes nothing for n <= 0", (t) => {
  for (const order of ORDERS) {
    const q = new TaskQueue<number>(order);
    q.push(1, 2);
    for (let i = 10; i < 15; i++) q.push(i);
    q.push(99, -1);
    const tasks = [-7];
    const prios = [42];
    q.give(0, tasks, prios);
    q.give(-3, tasks, prios);
    t.deepEqual(tasks, [-7]);
    t.is(q.size, 7);
    q.give(3, tasks, prios);
    t.deepEqual(tasks, [-7, 1, 10, 12], order);
    t.deepEqual(prios, [42, 2, 0, 0], order);
    t.is(q.size, 4);
    t.deepEqual(drain(q), order === "lifo" ? [14, 13, 11, 99] : [11, 13, 14, 99], order);
    // An empty queue gives nothing.
    q.give(5, tasks, prios);
    t.is(tasks.length, 4);
  }
});

test("give and pop from opposite ends of the ring never hand out a task twice", (t) => {
  const q = new TaskQueue<number>("lifo");
  for (let i = 0; i < 6; i++) q.push(i);
  t.is(q.pop(), 5);
  t.deepEqual(giveN(q, 2).tasks, [0, 2]);
  t.is(q.pop(), 4);
  t.deepEqual(giveN(q, 5).tasks, [1, 3]);
  t.is(q.size, 0);
  t.is(q.pop(), undefined);
  t.deepEqual(giveN(q, 1).tasks, []);
});

// --- ring growth --------------------------------------------------------------------------------------------

test("the ring grows past its initial 16 slots while its head has wrapped, losing and duplicating nothing", (t) => {
  for (const order of ORDERS) {
    for (const remove of ["give", "pop"] as const) {
      const q = new TaskQueue<number>(order);
      let next = 0;
      // Move the head forward: push 12, take 10 (pops under fifo, a give otherwise: a lifo queue keeps 9 and 11,
      // its head then at slot 10 of 16; a fifo one keeps 1 and 3, in slots 2 and 3, its tail back at slot 4).
      for (let i = 0; i < 12; i++) q.push(next++);
      const popsOnly = remove === "pop" && order === "fifo";
      const taken = popsOnly ? range(0, 10).map(() => q.pop() as number) : giveN(q, 10).tasks;
      const fifoGive = order === "fifo" && !popsOnly;
      t.deepEqual(taken, popsOnly ? range(0, 10) : fifoGive ? [0, 2, ...range(4, 12)] : [...range(0, 9), 10]);
      t.is(q.size, 2);
      // Fill to exactly 16 (the tail wraps past slot 15 to slot 10), then one more: it grows with a wrapped head.
      while (q.size < 16) q.push(next++);
      t.is(q.size, 16);
      q.push(next++);
      t.is(q.size, 17);
      // Grow again, past 32 and 64, with pops and gives in between so both ends move after growing.
      const popped = remove === "pop" ? [q.pop() as number] : [];
      t.deepEqual(popped, remove === "pop" ? [order === "lifo" ? 26 : 10] : [], `${order}: pop after growing`);
      for (let i = 0; i < 60; i++) q.push(next++);
      const given = giveN(q, 3).tasks;
      // Every other one of the oldest 6: of 11 12 13 ... after the pops (fifo); of 1 3 12 13 14 ... (fifo) and of
      // 9 11 12 13 14 ... (lifo) after the give.
      t.deepEqual(given, popsOnly ? [11, 13, 15] : fifoGive ? [1, 12, 14] : [9, 12, 14], order);
      const rest = drain(q);
      const seen = [...taken, ...popped, ...given, ...rest];
      t.is(seen.length, next, `${order}/${remove}: count`);
      t.deepEqual(
        [...seen].sort((a, b) => a - b),
        range(0, next),
        `${order}/${remove}: every task once`,
      );
      // What drained came out in the queue's order: increasing under fifo, decreasing under lifo.
      const sorted = [...rest].sort((a, b) => (order === "lifo" ? b - a : a - b));
      t.deepEqual(rest, sorted, `${order}/${remove}: drain order`);
      t.is(q.size, 0);
    }
  }
});

test("lifo pops across the wrap point of the ring, newest first", (t) => {
  const q = new TaskQueue<number>("lifo");
  for (let i = 0; i < 14; i++) q.push(i);
  t.deepEqual(giveN(q, 12).tasks, [...range(0, 11), 12]); // 11 and 13 stay, in slots 12 and 13
  for (let i = 14; i < 22; i++) q.push(i); // slots 14, 15, then 0..5
  t.is(q.size, 10);
  t.deepEqual(drain(q), [...range(14, 22).reverse(), 13, 11]);
  // Reusable after emptying across the wrap.
  q.push(100);
  q.push(101);
  t.deepEqual(drain(q), [101, 100]);
});

test("size counts the ring and the heap through pushes, pops and gives", (t) => {
  for (const order of ORDERS) {
    const q = new TaskQueue<number>(order);
    t.is(q.size, 0);
    for (let i = 0; i < 50; i++) {
      q.push(i, i % 5 === 0 ? 0 : (i % 5) - 2);
      t.is(q.size, i + 1);
    }
    q.pop();
    t.is(q.size, 49);
    giveN(q, 9);
    t.is(q.size, 40);
    giveN(q, 100);
    t.is(q.size, 0);
    q.push(7, 1);
    q.push(8);
    t.is(q.size, 2);
  }
});

// --- randomized, against a model ----------------------------------------------------------------------------

interface Entry {
  readonly task: number;
  readonly prio: number;
  readonly seq: number;
}

/** The queue's contract written the slow way: a flat list, searched on every operation. */
class Model {
  private entries: Entry[] = [];
  private seq = 0;
  constructor(private readonly order: TaskOrder) {}

  get size(): number {
    return this.entries.length;
  }

  push(task: number, prio: number): void {
    this.entries.push({ task, prio, seq: this.seq++ });
  }

  peekPriority(): number | undefined {
    return this.best(() => true)?.prio;
  }

  pop(): number | undefined {
    return this.take(this.best(() => true));
  }

  give(n: number, tasks: number[], prios: number[]): void {
    const out = (e: Entry) => {
      tasks.push(e.task);
      prios.push(e.prio);
      this.take(e);
    };
    // Positive priorities, best first: fifo, in order; lifo, the two sides alternate, at the top (at most half
    // leave) or at the bottom (more than half leave: every other one of the lowest 2 x kept stays).
    const positive: Entry[] = [];
    for (
      let e = this.best((x) => x.prio > 0 && !positive.includes(x));
      e;
      e = this.best((x) => x.prio > 0 && !positive.includes(x))
    )
      positive.push(e);
    const pOut = Math.max(0, Math.min(Math.ceil(n), positive.length));
    const pKept = positive.length - pOut;
    const pFrom = pOut <= pKept ? 0 : pOut - pKept;
    const pSpan = this.order === "lifo" ? 2 * Math.min(pOut, pKept) : 0;
    const pLeaves = (i: number) => i < pFrom || i - pFrom >= pSpan || (i - pFrom) % 2 === 0;
    let k = 0;
    for (let i = 0; i < positive.length && k < pOut; i++)
      if (pLeaves(i)) {
        out(positive[i] as Entry);
        k++;
      }
    // Priority 0: the smaller side alternates with the other, at the oldest end (at most half leave) or at the end
    // run next (more than half leave: every other one of the newest 2 x kept stays in a lifo queue, the newest
    // first; of the oldest 2 x kept in a fifo one, the oldest first, and everything newer leaves).
    const zero = this.entries.filter((x) => x.prio === 0).sort((a, b) => a.seq - b.seq);
    const m = Math.max(0, Math.min(n - k, zero.length));
    const kept = zero.length - m;
    const low = zero.length - 2 * kept;
    const alternate = (i: number) => (m <= kept ? i < 2 * m && i % 2 === 0 : i < low || (i - low) % 2 === 0);
    const fifo = (i: number) => (i < 2 * Math.min(m, kept) ? i % 2 === 0 : m > kept);
    const leaves = (i: number) => (this.order === "fifo" ? fifo(i) : alternate(i));
    for (const e of zero.filter((_, i) => leaves(i))) out(e);
    k += m;
    for (let e = this.best((x) => x.prio < 0); k < n && e; e = this.best((x) => x.prio < 0), k++) out(e);
  }

  /** Highest priority; among equals the newest (lifo) or oldest (fifo). */
  private best(filter: (e: Entry) => boolean): Entry | undefined {
    let out: Entry | undefined;
    for (const e of this.entries) {
      if (!filter(e)) continue;
      if (
        !out ||
        e.prio > out.prio ||
        (e.prio === out.prio && (this.order === "lifo" ? e.seq > out.seq : e.seq < out.seq))
      )
        out = e;
    }
    return out;
  }

  private oldest(filter: (e: Entry) => boolean): Entry | undefined {
    let out: Entry | undefined;
    for (const e of this.entries) if (filter(e) && (!out || e.seq < out.seq)) out = e;
    return out;
  }

  private take(e: Entry | undefined): number | undefined {
    if (!e) return undefined;
    this.entries.splice(this.entries.indexOf(e), 1);
    return e.task;
  }
}

const PRIORITIES = [0, 0, 0, 0, 0, 0, 1, 2, -1, -2, 0.5, 7];

/** Runs `ops` random operations on a TaskQueue and the model; returns the first disagreement, if any. */
function compare(order: TaskOrder, seed: number, ops: number): string | undefined {
  const rand = prng(seed);
  const q = new TaskQueue<number>(order);
  const m = new Model(order);
  let next = 0;
  let peak = 0;
  for (let i = 0; i < ops; i++) {
    // Phases of growth and of draining, so the ring grows several times and empties, and its ends wrap.
    const pushBias = Math.floor(i / 300) % 2 === 0 ? 0.65 : 0.3;
    const r = rand();
    const where = `seed ${seed}, ${order}, op ${i}`;
    if (r < pushBias) {
      const burst = 1 + Math.floor(rand() * 4);
      for (let b = 0; b < burst; b++) {
        const p = PRIORITIES[Math.floor(rand() * PRIORITIES.length)] as number;
        q.push(next, p);
        m.push(next, p);
        next++;
      }
    } else if (r < pushBias + (1 - pushBias) * 0.6) {
      const a = q.pop();
      const b = m.pop();
      if (a !== b) return `${where}: pop gave ${a}, the model ${b}`;
    } else {
      const n = Math.floor(rand() * 6);
      const got = giveN(q, n);
      const want = { tasks: [] as number[], prios: [] as number[] };
      m.give(n, want.tasks, want.prios);
      if (JSON.stringify(got) !== JSON.stringify(want)) {
        return `${where}: give(${n}) gave ${JSON.stringify(got)}, the model ${JSON.stringify(want)}`;
      }
    }
    if (q.size !== m.size) return `${where}: size ${q.size}, the model ${m.size}`;
    if (q.peekPriority() !== m.peekPriority()) {
      return `${where}: peekPriority ${q.peekPriority()}, the model ${m.peekPriority()}`;
    }
    peak = Math.max(peak, q.size);
  }
  // Both must hold the same tasks at the end, in the same order.
  for (let a = q.pop(), b = m.pop(); a !== undefined || b !== undefined; a = q.pop(), b = m.pop()) {
    if (a !== b) return `seed ${seed}, ${order}, final drain: pop gave ${a}, the model ${b}`;
  }
  if (peak <= 64) return `seed ${seed}, ${order}: the queue never grew past 64 (peak ${peak}); the test is too weak`;
  return undefined;
}

// Fixed seeds, plus one new each run (printed on failure; set QUEUE_SEED to replay it).
const SEEDS = [1, 2, 3, 0xc0ffee, Number(process.env.QUEUE_SEED ?? Math.floor(Math.random() * 2 ** 32))];

for (const order of ORDERS) {
  test(`randomized: TaskQueue (${order}) agrees with a naive model over 4000 operations per seed`, (t) => {
    for (const seed of SEEDS) {
      const mismatch = compare(order, seed, 4000);
      t.is(mismatch, undefined, `${mismatch} (replay with QUEUE_SEED=${seed})`);
    }
  });
}
