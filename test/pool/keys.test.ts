/**
 * Task selection by locality key (lib/pool/keys.ts, queue.ts `give`, batch.ts, the distributed engine's
 * `sendMovable` and TRANSFER's `k`), in process: whole groups of one key leave rather than a mix, the
 * receiver's recent keys first, this rank's recent keys last, keys travel with the tasks that move, and a
 * queue without keys gives exactly as before. (The simulation runs a keyed workload under every balancer;
 * test/apps/parallel.slow.test.ts runs keyed block matching between real ranks.)
 */
import test from "ava";
import { TaskBatch } from "../../lib/pool/batch.ts";
import { DistributedEngine } from "../../lib/pool/distributed/engine.ts";
import { RECENT_KEYS, RecentKeys, type TaskKey } from "../../lib/pool/keys.ts";
import { resolvePoolConfig } from "../../lib/pool/options.ts";
import { TaskQueue } from "../../lib/pool/queue.ts";
import { Results } from "../../lib/pool/results.ts";
import { PoolRuntime } from "../../lib/pool/runtime.ts";
import { emptyStats, type TaskContext } from "../../lib/pool/types.ts";

/** A queue holding `groups` as [key, count] runs, tasks numbered from 0 in that order (oldest first). */
function keyedQueue(groups: [TaskKey | undefined, number][], recent?: RecentKeys, order: "lifo" | "fifo" = "lifo") {
  const q = new TaskQueue<number>(order, recent);
  let id = 0;
  for (const [key, count] of groups) for (let i = 0; i < count; i++) q.push(id++, 0, key);
  return q;
}

function give(q: TaskQueue<number>, n: number, prefer?: TaskKey[]) {
  const tasks: number[] = [];
  const prios: number[] = [];
  const keys: (TaskKey | null)[] = [];
  q.give(n, tasks, prios, keys, prefer);
  return { tasks, prios, keys };
}

/** Everything left in the queue, in pop order. */
function drain(q: TaskQueue<number>): number[] {
  const out: number[] = [];
  for (let t = q.pop(); t !== undefined; t = q.pop()) out.push(t);
  return out;
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

test("a queue without keys gives as before keys existed: alternately from the oldest end", (t) => {
  const q = new TaskQueue<number>("lifo");
  for (let i = 0; i < 10; i++) q.push(i);
  t.false(q.keyed);
  const tasks: number[] = [];
  const prios: number[] = [];
  q.give(4, tasks, prios);
  t.deepEqual(tasks, [0, 2, 4, 6]);
  t.deepEqual(prios, [0, 0, 0, 0]);
  t.deepEqual(drain(q), [9, 8, 7, 5, 3, 1]);
  const b = new TaskBatch<number>();
  for (let i = 0; i < 3; i++) b.add(i, 0);
  const body: Record<string, unknown> = {};
  b.drainInto(body);
  t.deepEqual(body, { t: [0, 1, 2] }, "no `k` on the wire when no task has a key");
});

test("whole groups leave rather than a mix: a group that would be split is skipped once half the share is given", (t) => {
  // Groups a:3 b:5 c:2. Asked for 6: a (3) fits whole; b (5) would be split with half given: skipped; c fits.
  const q = keyedQueue([
    ["a", 3],
    ["b", 5],
    ["c", 2],
  ]);
  const g = give(q, 6);
  t.deepEqual(g.tasks, [0, 1, 2, 8, 9]);
  t.deepEqual(g.keys, ["a", "a", "a", "c", "c"]);
  t.deepEqual(g.prios, [0, 0, 0, 0, 0]);
  // b stays whole, in order, at the old end.
  t.deepEqual(drain(q), [7, 6, 5, 4, 3]);
});

test("a group bigger than the share is split only when less than half is given: its oldest tasks leave", (t) => {
  const q = keyedQueue([
    ["a", 10],
    ["b", 4],
  ]);
  const g = give(q, 4);
  t.deepEqual(g.tasks, [0, 1, 2, 3]);
  t.deepEqual(g.keys, ["a", "a", "a", "a"]);
  t.is(q.size, 10);
  // At least one task leaves whenever one is asked for, even if every group is bigger.
  t.deepEqual(give(q, 1).tasks, [4]);
});

test("the receiver's recent keys leave first, in its order, wherever they are in the window", (t) => {
  const q = keyedQueue([
    ["a", 3],
    [1, 3],
    ["c", 3],
  ]);
  const g = give(q, 6, ["c", "zzz", 1]);
  t.deepEqual(g.keys, [1, 1, 1, "c", "c", "c"], "queue order within what leaves");
  t.deepEqual(g.tasks, [3, 4, 5, 6, 7, 8]);
  t.deepEqual(drain(q), [2, 1, 0]);
});

test("this rank's recent keys leave last, least recently run first", (t) => {
  const recent = new RecentKeys();
  const q = keyedQueue(
    [
      ["a", 2],
      ["b", 2],
      ["c", 2],
      ["d", 2],
    ],
    recent,
    "fifo",
  );
  recent.note("x");
  recent.note("a");
  recent.note("b"); // most recent: b, then a
  t.deepEqual(give(q, 4).keys, ["c", "c", "d", "d"]);
  t.deepEqual(give(q, 2).keys, ["a", "a"], "a was run less recently than b");
  t.deepEqual(give(q, 2).keys, ["b", "b"]);
  // A key both ranks ran recently goes to the receiver that asked for it.
  const q2 = keyedQueue(
    [
      ["a", 2],
      ["b", 2],
    ],
    recent,
  );
  t.deepEqual(give(q2, 2, ["b"]).keys, ["b", "b"]);
});

test("popping notes the keys that run; RecentKeys keeps the last few distinct ones", (t) => {
  const recent = new RecentKeys();
  const q = keyedQueue(
    [
      ["a", 2],
      [undefined, 1],
      ["b", 2],
    ],
    recent,
    "fifo",
  );
  q.pop();
  t.deepEqual(recent.list(), ["a"]);
  q.pop();
  q.pop();
  t.deepEqual(recent.list(), ["a"], "a task without a key notes nothing");
  q.pop();
  t.deepEqual(recent.list(), ["b", "a"]);
  for (let k = 0; k < RECENT_KEYS + 2; k++) recent.note(k);
  t.is(recent.size, RECENT_KEYS);
  t.deepEqual(recent.list()[0], RECENT_KEYS + 1);
  recent.note(RECENT_KEYS - 1);
  t.deepEqual(recent.list().slice(0, 2), [RECENT_KEYS - 1, RECENT_KEYS + 1], "a known key moves to the front");
});

test("keyed give looks at a window of the oldest 2n + 64 tasks only (O(n), whatever the queue's size)", (t) => {
  // The receiver prefers "far", which lies beyond the window: the oldest group leaves instead.
  const q = keyedQueue([
    ["near", 100],
    ["mid", 100],
    ["far", 10],
  ]);
  t.deepEqual(new Set(give(q, 10, ["far"]).keys), new Set(["near"]));
  // Within the window it is found.
  const q2 = keyedQueue([
    ["near", 30],
    ["far", 10],
  ]);
  t.deepEqual(new Set(give(q2, 10, ["far"]).keys), new Set(["far"]));
  t.is(q2.size, 30);
});

test("tasks without a key are split freely; priorities leave as before, with their keys", (t) => {
  const q = new TaskQueue<number>("lifo");
  q.push(0, 0, "a");
  q.push(1, 0);
  q.push(2, 0);
  q.push(3, 0);
  q.push(4, 2, "hi");
  q.push(5, -1, "lo");
  q.push(6, 0, "a");
  const g = give(q, 4);
  // Positive priority first; then a's two tasks (whole) and one of the keyless ones, in queue order.
  t.deepEqual(g.tasks, [4, 0, 1, 6]);
  t.deepEqual(g.prios, [2, 0, 0, 0]);
  t.deepEqual(g.keys, ["hi", "a", null, "a"]);
  const rest = give(q, 10);
  t.deepEqual(rest.tasks, [2, 3, 5]);
  t.deepEqual(rest.keys, [null, null, "lo"]);
  t.is(q.size, 0);
});

test("the queue stays a correct queue through keyed gives, pushes and growth", (t) => {
  // A model check: random pushes (keys, priorities), pops and keyed gives; every task leaves exactly once, and
  // a give moves at least one task when asked for any and never more than asked.
  let seed = 7;
  const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32) as number;
  for (const order of ["lifo", "fifo"] as const) {
    const q = new TaskQueue<number>(order, new RecentKeys());
    const seen = new Set<number>();
    let next = 0;
    for (let step = 0; step < 5000; step++) {
      const r = rnd();
      if (r < 0.55) {
        const key = rnd() < 0.2 ? undefined : Math.floor(rnd() * 6);
        q.push(next++, rnd() < 0.1 ? Math.floor(rnd() * 5) - 2 : 0, key);
      } else if (r < 0.85) {
        const task = q.pop();
        if (task !== undefined) {
          t.false(seen.has(task));
          seen.add(task);
        }
      } else {
        const before = q.size;
        const n = 1 + Math.floor(rnd() * 20);
        const g = give(q, n, rnd() < 0.5 ? [Math.floor(rnd() * 6)] : undefined);
        t.is(g.tasks.length, before - q.size);
        t.true(g.tasks.length <= n && (before === 0 || g.tasks.length >= 1));
        t.is(g.keys.length, g.tasks.length);
        for (const task of g.tasks) {
          t.false(seen.has(task));
          seen.add(task);
        }
      }
    }
    for (const task of drain(q)) {
      t.false(seen.has(task));
      seen.add(task);
    }
    t.is(seen.size, next, order);
  }
});

test("the engine: keys travel in TRANSFER's `k`, and a REQUEST's keys choose what is given", (t) => {
  // Two engines; messages are captured, not delivered: rank 0 answers a request from rank 1 by hand.
  const size = 2;
  const config = resolvePoolConfig({ mode: "distributed" }, undefined, size);
  const sent: { dest: number; tag: number; body: Record<string, unknown> }[] = [];
  const engineOf = (rank: number, initial: { task: number; priority: number; to: undefined; key?: TaskKey }[]) => {
    const link = {
      rank,
      size,
      send(dest: number, tag: number, body: Record<string, unknown>): number {
        sent.push({ dest, tag, body: structuredClone(body) });
        return 0;
      },
    };
    const rt = new PoolRuntime(link, config, 1, emptyStats(rank, "distributed"), Results.of(undefined));
    const ctx: TaskContext<number> = {
      rank,
      signal: new AbortController().signal,
      put: () => {},
      stop: () => {},
      give: () => {},
    };
    return new DistributedEngine<number>(rt, () => 1, ctx, initial);
  };
  const initial = [
    ...range(0, 4).map((task) => ({ task, priority: 0, to: undefined, key: "p1" })),
    ...range(4, 8).map((task) => ({ task, priority: 0, to: undefined, key: "p2" })),
    ...range(8, 12).map((task) => ({ task, priority: 0, to: undefined, key: "p3" })),
  ];
  const giver = engineOf(0, initial);
  const asker = engineOf(1, []);
  t.deepEqual(asker.recentKeys(), []);
  // The giver runs one task (lifo: the newest, key p3): p3 is now its recent key.
  t.is(giver.next(), 11);
  t.deepEqual(giver.recentKeys(), ["p3"]);
  // The asker ran p2 before; its request names it; the giver's receiver answers with p2's tasks.
  giver.onMessage(1, tagOf(giver, "request"), { e: 1, l: 0, k: ["p2"] });
  const transfer = sent.find((m) => m.dest === 1);
  t.truthy(transfer);
  t.deepEqual(transfer?.body.t, [4, 5, 6, 7]);
  t.deepEqual(transfer?.body.k, ["p2", "p2", "p2", "p2"]);
  // Delivered, the tasks keep their keys: the asker runs them and notes p2.
  asker.onMessage(0, transfer?.tag as number, transfer?.body as Record<string, unknown>);
  t.is(asker.movable, 4);
  asker.next();
  t.deepEqual(asker.recentKeys(), ["p2"]);
  // A request without keys: p1 (oldest, not the giver's recent p3) leaves whole.
  sent.length = 0;
  giver.onMessage(1, tagOf(giver, "request"), { e: 1, l: 3 });
  t.deepEqual(sent[0]?.body.k, ["p1", "p1"]);
  t.deepEqual(sent[0]?.body.t, [0, 1]);
  for (const e of [giver, asker]) e.fail(new Error("test over"));
  return Promise.allSettled([giver.done, asker.done]);
});

/** The tag an engine gives a message kind (its protocol is private; the test reads it for routing by hand). */
function tagOf(engine: DistributedEngine<number>, kind: string): number {
  const protocol = (engine as unknown as { protocol: { tag: Map<string, number> } }).protocol;
  return protocol.tag.get(kind) as number;
}
