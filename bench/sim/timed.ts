/**
 * A timed, in-process simulation of the distributed pool: N real DistributedEngines (real balancers, partner
 * policies, termination detectors, queues and results) in one thread, driven by a virtual clock (clock.ts).
 * The untimed sibling, test/helpers/simulation.ts, hunts for wrong answers under adversarial orders; this
 * one asks how long a run takes, at sizes no machine here can launch (1024 ranks):
 *
 * - Each task has a simulated duration (the workload gives it). A rank runs one task at a time and, like the
 *   emulated real runs (whose tasks are timed waits), handles the messages and timers that fall due while its
 *   task runs. The handler itself runs when the task's time is up (so a tree task puts its children at its
 *   end, as bench/programs/trees-ranks.ts's emulated nodes do).
 * - Every message arrives `messageMs` (plus a seeded jitter of up to 10%) after it leaves, plus `perTaskMs`
 *   per task it carries (its size); channels are FIFO (a message never arrives before one sent earlier on its
 *   channel), as ZeroMQ's are. Each message also costs its sender `sendCpuMs` and its receiver `receiveCpuMs`
 *   of CPU: a rank's sends and receipts queue one after another on its CPU, so a root sending DONE to 4,095
 *   ranks, or a rank answering a thousand requests, takes time that grows with their number. (Tasks are timed
 *   waits, as in the emulated real runs: they take no CPU, and a rank handles messages while one runs.)
 * - Ranks start at seeded times spread over `startSkewMs` (the skew of leaving the barrier before `run`).
 * - Timers (the engine's `Timers` seam) fire at virtual times, at least 1 ms after they are set, as Node's do.
 *
 * Between events a rank's steps mirror DistributedEngine's run loop (next, execute, afterTask, settle, park),
 * as the untimed simulation does. The engine also reads the real clock (Executor statistics, `lastActivityAt`):
 * harmless here (only latency counters use it); every figure comes from the virtual clock.
 *
 * Outcome: makespan (when the root detected termination, as the real bench times it on rank 0), the bound
 * max(total work / ranks, longest task; for a tree, longest root-to-leaf chain of durations), pool messages
 * per task, tasks moved, and an exactly-once check (every task ran once; every rank's result counts them all).
 */
import { Random } from "../../apps/common/random.ts";
import type { TaskContext } from "../../lib/index.ts";
import {
  comboFromName,
  DistributedEngine,
  emptyStats,
  type PoolLink,
  type PoolOptions,
  PoolRuntime,
  resolvePoolConfig,
  Results,
  type Timers,
} from "../../lib/internal.ts";
import { registered } from "../combos.ts";
import { drawEmulatedMs, MEAN_MS, putEmulatedWork } from "../programs/emulated.ts";
import { type ClockEvent, VirtualClock } from "./clock.ts";

/**
 * Workloads, all of emulated work (Pareto alpha 3, mean 20 ms, as bench/programs/emulated.ts):
 * - one-source: `workPerRankMs x size` of independent tasks, all put on rank 0.
 * - spread: every rank puts its own `workPerRankMs` of independent tasks (its own seed).
 * - tree: one root task on rank 0 whose subtree holds `workPerRankMs x size` of work: each task takes a
 *   Pareto duration of its subtree's budget and splits the rest among 1 to 4 children at random weights
 *   (a leaf below 1 ms of rest keeps it), so subtrees are uneven and work only spreads as the tree unfolds.
 * - deep: the same from one root task, in the shape of UTS T3 (a binomial tree near its critical point: long
 *   chains, a narrow frontier): each task has one child, which gets all the rest, except that one task in
 *   `DEEP_FORK` (seeded) forks two, at random weights; so few tasks are ever queued beyond those running, and
 *   the longest chain is a good part of the bound.
 */
export const TIMED_WORKLOADS = ["one-source", "spread", "tree", "deep"] as const;
export type TimedWorkload = (typeof TIMED_WORKLOADS)[number];

/**
 * What messages cost: `messageMs` in flight per message (plus a seeded jitter of up to 10%), plus `perTaskMs`
 * per task carried; `sendCpuMs` and `receiveCpuMs` of the sending and the receiving rank's CPU per message;
 * and ranks starting spread over `startSkewMs`.
 */
export interface Latency {
  readonly messageMs: number;
  readonly perTaskMs: number;
  /** @default 0 */
  readonly sendCpuMs?: number;
  /** @default 0 */
  readonly receiveCpuMs?: number;
  /** @default 0 */
  readonly startSkewMs?: number;
  /**
   * CPUs the ranks share for that per-message work (a machine with fewer cores than ranks, as the real 64-rank
   * runs on 2 cores); each rank's own messages still take turns. @default one per rank
   */
  readonly cores?: number;
}

/**
 * About a message between two processes over loopback ZeroMQ, a few microseconds to encode a task, and the
 * CPU a Node.js rank spends to encode and hand over a small message (send), and to take, decode and route one
 * (receive); ranks leave the barrier before `run` within a millisecond.
 */
export const DEFAULT_LATENCY: Latency = {
  messageMs: 0.05,
  perTaskMs: 0.002,
  sendCpuMs: 0.005,
  receiveCpuMs: 0.01,
  startSkewMs: 1,
};

export function describeLatency(l: Latency = DEFAULT_LATENCY): string {
  return (
    `each message arrives ${l.messageMs * 1000} us after it leaves (+ up to 10% seeded jitter) + ${l.perTaskMs * 1000} us ` +
    `per task it carries, and costs ${(l.sendCpuMs ?? 0) * 1000} us of its sender's CPU and ${(l.receiveCpuMs ?? 0) * 1000} us ` +
    `of its receiver's${l.cores === undefined ? "" : ` on ${l.cores} shared cores`}; FIFO channels; ranks start spread over ` +
    `${l.startSkewMs ?? 0} ms; timers fire at virtual times`
  );
}

export interface TimedParams {
  readonly size: number;
  /** A combination's short name (`comboName`): `receiver/random/token-ring`, `lifeline/tree`. */
  readonly combo: string;
  readonly workload: TimedWorkload;
  /** Work per rank, ms (the workload's total is this times `size`). */
  readonly workPerRankMs: number;
  readonly seed: number;
  /** @default DEFAULT_LATENCY */
  readonly latency?: Latency;
  /** Further pool options (`topology`, `lowWater`, ...); the combination's own win. */
  readonly options?: PoolOptions;
  /**
   * A run still going after this many times the work per rank (virtual, plus 1 s) is stopped and reported.
   * @default 5
   */
  readonly maxRatio?: number;
  /**
   * The emulated work's seed, as the real bench's rank programs draw it (programs/strategies-ranks.ts: one-source
   * `workSeed`, spread `workSeed + 7919 x rank`), so a simulated run does the same work as a real one.
   * @default derived from `seed`
   */
  readonly workSeed?: number;
  /**
   * Runs no pool: the reference of an ideal central scheduler instead, on the same work. One queue, newest
   * task first (the pools' default order), that every rank takes from the moment it is free, with messages
   * that cost nothing: greedy list scheduling, what a tree's unfolding allows without knowing subtree sizes.
   */
  readonly ideal?: boolean;
  /** Test seam: the n-th task message sent (from 1) is lost, so a test can see the checks catch it. */
  readonly loseTaskMessage?: number;
}

export interface TimedOutcome {
  readonly params: TimedParams;
  /** Empty when the run was correct (exactly once, no hang); else what went wrong. */
  readonly problems: string[];
  readonly tasks: number;
  readonly totalWorkMs: number;
  /** Longest task; for a tree, the longest root-to-leaf chain of task durations. */
  readonly longestMs: number;
  readonly boundMs: number;
  /** False when the run was stopped at `maxRatio` times the work per rank, or hung. */
  readonly ended: boolean;
  /** Virtual time when the root detected termination (NaN if it never did). */
  readonly makespanMs: number;
  /** Virtual time when the last task ended, and when the last rank learnt that the run was over. */
  readonly lastTaskMs: number;
  readonly allDoneMs: number;
  /** From the last task's end to the root's detection, and to every rank's end (ms). */
  readonly detectMs: number;
  readonly endMs: number;
  /** makespan / bound. */
  readonly ratio: number;
  /** Pool messages sent by every rank, and per task. */
  readonly messages: number;
  readonly messagesPerTask: number;
  /** Tasks moved between ranks (every rank's tasksMovedIn). */
  readonly moved: number;
  /** Sum of every rank's pool counters (times left out: they are the real clock's). */
  readonly counters: Record<string, number>;
  /** Clock events run, and the real time the simulation took (s). */
  readonly events: number;
  /** Most events pending at once. */
  readonly peakEvents: number;
  readonly wallSeconds: number;
}

/** The line that replays a run. */
export function replayTimed(p: TimedParams): string {
  return `replay: simulateTimed(${JSON.stringify(p)}) (bench/sim/timed.ts)`;
}

interface SimTask {
  readonly id: number;
  readonly ms: number;
  /** tree: work of the task's subtree below it, ms. */
  readonly w?: number;
  /** tree: durations of the chain of tasks above it, ms. */
  readonly c?: number;
  /** tree: the task's place in the tree, hashed (its shape depends on the seed only, not on the schedule). */
  readonly k?: number;
}

interface SimRank {
  readonly engine: DistributedEngine<SimTask>;
  running: SimTask | undefined;
  done: "pending" | "resolved" | "rejected";
  error: Error | undefined;
  over: boolean;
}

const DEFAULT_MAX_RATIO = 5;
/** Below this much work left in its subtree, a tree task is a leaf and does it all itself. */
const LEAF_REST_MS = 1;
const MAX_CHILDREN = 4;
/** deep: the share of tasks that fork two children (the others have one). */
const DEEP_FORK = 0.25;

export async function simulateTimed(params: TimedParams): Promise<TimedOutcome> {
  const wall0 = performance.now();
  const { size, workload, seed } = params;
  const combo = comboFromName(params.combo);
  if (!combo) throw new Error(`simulateTimed: unknown combination \`${params.combo}\` (see comboName in config.ts)`);
  if (!registered(combo))
    throw new Error(`simulateTimed: combination \`${params.combo}\` names a strategy not in the registries yet`);
  if (!Number.isInteger(size) || size < 2) throw new Error(`simulateTimed: size must be an integer >= 2; got ${size}`);
  if (!(params.workPerRankMs > 0))
    throw new Error(`simulateTimed: workPerRankMs must be > 0; got ${params.workPerRankMs}`);
  const latency = params.latency ?? DEFAULT_LATENCY;
  const config = resolvePoolConfig(
    { ...params.options, mode: "distributed", ...combo, seed: params.options?.seed ?? seed },
    undefined,
    size,
  );

  const clock = new VirtualClock();
  const problems: string[] = [];
  const jitter = new Random(seed * 7919 + 13);
  /** When the last message sent on each channel arrives (FIFO channels). */
  const channelLast = new Float64Array(size * size);
  /** Task messages delivered or not: counted to catch tasks left in flight after the end. */
  const inFlightTasks = new Set<ClockEvent>();
  let taskMessages = 0;

  // ---- the workload ----
  const executed: number[] = [];
  let created = 0;
  let totalWorkMs = 0;
  let longestMs = 0;
  let lastTaskMs = 0;
  let ran = 0;
  const newTask = (ms: number, tree?: { w: number; c: number; k: number }): SimTask => {
    totalWorkMs += ms;
    const chain = (tree?.c ?? 0) + ms;
    if (chain > longestMs) longestMs = chain;
    const t: SimTask = tree === undefined ? { id: created, ms } : { id: created, ms, ...tree };
    executed[created++] = 0;
    return t;
  };
  const initial: SimTask[][] = Array.from({ length: size }, () => []);
  const budget = params.workPerRankMs * size;
  const ws = params.workSeed;
  if (workload === "one-source") putEmulatedWork((ms) => initial[0]?.push(newTask(ms)), budget, ws ?? seed);
  else if (workload === "spread") {
    for (let r = 0; r < size; r++) {
      const s = ws === undefined ? seed * 100_003 + r : ws + 7919 * r;
      putEmulatedWork((ms) => initial[r]?.push(newTask(ms)), params.workPerRankMs, s);
    }
  } else initial[0]?.push(treeTask(budget, 0, mix(seed, workload === "deep" ? 0xdee9 : 0x5eed)));

  /** A tree task with `subtree` ms of work (itself included), below a chain of `chain` ms, at place `key`. */
  function treeTask(subtree: number, chain: number, key: number): SimTask {
    let ms = Math.min(subtree, drawEmulatedMs(new Random(key)));
    if (subtree - ms < LEAF_REST_MS) ms = subtree;
    return newTask(ms, { w: subtree - ms, c: chain, k: key });
  }
  const childrenOf = (task: SimTask): SimTask[] => {
    const rest = task.w ?? 0;
    const key = task.k ?? 0;
    if (rest <= 0) return [];
    const random = new Random(mix(key, 0x9e3779b9));
    const n =
      rest < 2 * MEAN_MS
        ? 1
        : workload === "deep"
          ? random.next() < DEEP_FORK
            ? 2
            : 1
          : 1 + Math.floor(random.next() * MAX_CHILDREN);
    const weights = Array.from({ length: n }, () => 0.1 + random.next());
    const sum = weights.reduce((a, b) => a + b, 0);
    const chain = (task.c ?? 0) + task.ms;
    return weights.map((x, i) => treeTask((rest * x) / sum, chain, mix(key, i + 1)));
  };

  if (params.ideal) return idealRun();
  /** The ideal central scheduler (`ideal`): greedy, newest first, free messages. */
  function idealRun(): TimedOutcome {
    const queue: SimTask[] = initial.flat();
    let free = size;
    const fill = () => {
      for (; free > 0 && queue.length > 0; free--) {
        const task = queue.pop() as SimTask;
        clock.at(clock.now + task.ms, () => {
          executed[task.id] = 1;
          ran++;
          lastTaskMs = clock.now;
          free++;
          if (workload === "tree" || workload === "deep") queue.push(...childrenOf(task));
          fill();
        });
      }
    };
    fill();
    while (clock.step(Number.POSITIVE_INFINITY));
    const boundMs = Math.max(totalWorkMs / size, longestMs);
    return {
      params,
      problems: ran === created ? [] : [`${ran} task runs, expected ${created}`],
      tasks: created,
      totalWorkMs,
      longestMs,
      boundMs,
      ended: true,
      makespanMs: lastTaskMs,
      lastTaskMs,
      allDoneMs: lastTaskMs,
      detectMs: 0,
      endMs: 0,
      ratio: lastTaskMs / boundMs,
      messages: 0,
      messagesPerTask: 0,
      moved: 0,
      counters: {},
      events: clock.events,
      peakEvents: clock.peak,
      wallSeconds: (performance.now() - wall0) / 1000,
    };
  }

  // ---- the ranks ----
  const ranks: SimRank[] = [];
  let overCount = 0;
  let rootDoneMs = Number.NaN;
  let allDoneMs = Number.NaN;
  /** After a callback on rank r: did the run end there? */
  const checkOver = (sr: SimRank, rank: number): void => {
    if (sr.over || !sr.engine.over) return;
    sr.over = true;
    overCount++;
    if (rank === 0) rootDoneMs = clock.now;
    if (overCount === size) allDoneMs = clock.now;
  };
  /** Runs a callback of rank r's: a throw is the engine's failure, as it would crash a real rank. */
  const onRank = (rank: number, fn: () => void): void => {
    const sr = ranks[rank] as SimRank;
    try {
      fn();
    } catch (e) {
      problems.push(`rank ${rank} threw at ${clock.now.toFixed(3)} ms: ${(e as Error).message}`);
      sr.engine.fail(e as Error);
    }
    checkOver(sr, rank);
  };

  const sendCpu = latency.sendCpuMs ?? 0;
  const receiveCpu = latency.receiveCpuMs ?? 0;
  /**
   * When each rank's CPU is next free: its sends and receipts take turns on it. Before a rank starts (start-up
   * skew) it holds what arrives, as a real rank stashes messages for a pool it has not started to run.
   */
  const cpuFree = new Float64Array(size);
  /** With `cores`: when each shared core is next free. */
  const coreFree = latency.cores === undefined ? undefined : new Float64Array(Math.max(1, latency.cores));
  /** Runs `cost` ms of rank r's CPU work from now on: after its earlier work, on the first free shared core. */
  const cpu = (rank: number, cost: number): number => {
    let start = Math.max(clock.now, cpuFree[rank] as number);
    if (coreFree !== undefined) {
      let c = 0;
      for (let i = 1; i < coreFree.length; i++) if ((coreFree[i] as number) < (coreFree[c] as number)) c = i;
      start = Math.max(start, coreFree[c] as number);
      coreFree[c] = start + cost;
    }
    cpuFree[rank] = start + cost;
    return start + cost;
  };
  const handle = (source: number, dest: number, tag: number, body: Record<string, unknown>, ev: ClockEvent) => {
    inFlightTasks.delete(ev);
    onRank(dest, () => (ranks[dest] as SimRank).engine.onMessage(source, tag, body));
  };
  /** A message arrived: the receiver handles it once its CPU has taken it (after earlier ones: FIFO kept). */
  const deliver = (source: number, dest: number, tag: number, body: Record<string, unknown>, ev: ClockEvent) => {
    if (receiveCpu === 0 && (cpuFree[dest] as number) <= clock.now) return handle(source, dest, tag, body, ev);
    const at = cpu(dest, receiveCpu);
    const later: ClockEvent = clock.at(at, () => handle(source, dest, tag, body, later));
    if (inFlightTasks.delete(ev)) inFlightTasks.add(later);
  };

  /** One stretch of rank r's run loop (DistributedEngine.loop without its awaits), from `resumed` or after a task. */
  const begin = (rank: number, resumed: boolean): void => {
    const sr = ranks[rank] as SimRank;
    const e = sr.engine;
    onRank(rank, () => {
      for (let top = resumed; !e.over; top = true) {
        if (top) e.afterTask();
        const task = e.next();
        if (task !== undefined) {
          sr.running = task;
          clock.at(clock.now + task.ms, () => end(rank));
          return;
        }
        if (e.settle()) continue;
        if (e.park()) {
          e.wakeup = () => clock.soon(() => begin(rank, true));
          return;
        }
      }
    });
  };
  /** The step before a rank's first task (DistributedEngine `open`: it may wait on its offers), then its loop. */
  const first = (rank: number): void => {
    const e = (ranks[rank] as SimRank).engine;
    let gated = false;
    onRank(rank, () => {
      gated = e.open();
    });
    if (gated) e.wakeup = () => clock.soon(() => begin(rank, true));
    else begin(rank, true);
  };
  const end = (rank: number): void => {
    const sr = ranks[rank] as SimRank;
    const task = sr.running as SimTask;
    sr.running = undefined;
    if (clock.now > lastTaskMs) lastTaskMs = clock.now;
    let ok = true;
    onRank(rank, () => {
      sr.engine.execute(task);
      if (sr.engine.over) ok = false;
      else sr.engine.afterTask();
    });
    if (ok) begin(rank, false);
  };

  for (let rank = 0; rank < size; rank++) {
    const link: PoolLink = {
      rank,
      size,
      send(dest, tag, body) {
        if (dest < 0 || dest >= size || dest === rank || !Number.isInteger(dest)) {
          problems.push(`rank ${rank} sent tag ${tag} to rank ${dest}`);
          return 0;
        }
        const copy = copyBody(body);
        const carried = (copy.t as unknown[] | undefined)?.length ?? 0;
        if (carried > 0 && ++taskMessages === params.loseTaskMessage) return 0;
        const key = rank * size + dest;
        let leaves = clock.now;
        if (sendCpu > 0) leaves = cpu(rank, sendCpu);
        let t = leaves + latency.messageMs * (1 + 0.1 * jitter.next()) + carried * latency.perTaskMs;
        const last = channelLast[key] as number;
        if (t < last) t = last;
        channelLast[key] = t;
        const ev: ClockEvent = clock.at(t, () => deliver(rank, dest, tag, copy, ev));
        if (carried > 0) inFlightTasks.add(ev);
        return 0;
      },
    };
    const timers: Timers = {
      after(ms, fn) {
        const ev = clock.at(clock.now + Math.max(1, ms), () => onRank(rank, fn));
        return () => {
          ev.fn = undefined;
        };
      },
      soon: (fn) => clock.soon(() => onRank(rank, fn)),
    };
    const stats = emptyStats(rank, "distributed");
    stats.startedAt = 1;
    const rt = new PoolRuntime(link, config, 1, stats, Results.of(undefined), undefined);
    const ctx: TaskContext<SimTask> = {
      rank,
      signal: new AbortController().signal,
      put: (task, o) => engine.put(task, o?.priority ?? 0, o?.to),
      stop: () => problems.push(`rank ${rank}: a task called ctx.stop (no workload here does)`),
      give: () => problems.push(`rank ${rank}: a task called ctx.give (no workload here does)`),
    };
    const handler = (task: SimTask, c: TaskContext<SimTask>): number => {
      executed[task.id] = (executed[task.id] ?? 0) + 1;
      ran++;
      if (workload === "tree" || workload === "deep") for (const child of childrenOf(task)) c.put(child);
      return 1;
    };
    const start = (initial[rank] as SimTask[]).map((task) => ({ task, priority: 0, to: undefined }));
    const engine: DistributedEngine<SimTask> = new DistributedEngine<SimTask>(rt, handler, ctx, start, timers);
    const sr: SimRank = { engine, running: undefined, done: "pending", error: undefined, over: false };
    engine.done.then(
      () => {
        sr.done = "resolved";
      },
      (e: Error) => {
        sr.done = "rejected";
        sr.error = e;
      },
    );
    ranks.push(sr);
  }
  initial.length = 0;

  // ---- run ----
  const boundOf = () => Math.max(totalWorkMs / size, longestMs);
  // A run that takes this long (virtual) has lost its way: a livelock, or balancing gone very wrong.
  const maxRatio = params.maxRatio ?? DEFAULT_MAX_RATIO;
  const limit = maxRatio * Math.max(params.workPerRankMs, boundOf()) + 1000;
  const skew = latency.startSkewMs ?? 0;
  const starts = new Random(seed * 104_729 + 7);
  for (let rank = 0; rank < size; rank++) {
    if (skew > 0) {
      cpuFree[rank] = starts.next() * skew;
      clock.at(cpuFree[rank] as number, () => first(rank));
    } else clock.soon(() => first(rank));
  }
  while (overCount < size && clock.step(limit));
  // Let the engines' done promises settle.
  await new Promise((resolve) => setImmediate(resolve));

  // ---- checks ----
  if (overCount < size) {
    const running = ranks.filter((r) => !r.over).length;
    problems.push(
      clock.now >= limit || clock.pending().some((ev) => ev.fn !== undefined)
        ? `no end by ${fmtMs(limit)} virtual (${maxRatio}x the work per rank): ${ran} of ${created} tasks run, ` +
            `last at ${fmtMs(lastTaskMs)}; ${running} rank(s) still running (a livelock, or balancing that barely spreads the work)`
        : `hang at ${fmtMs(clock.now)} virtual: nothing left to happen, ${running} rank(s) never ended (lost wake-up or message)`,
    );
  }
  for (const [rank, r] of ranks.entries()) {
    if (r.done === "rejected") problems.push(`rank ${rank} rejected: ${r.error?.message}`);
  }
  if (problems.length === 0) {
    let wrong = 0;
    for (let id = 0; id < created; id++) {
      const n = executed[id] ?? 0;
      if (n !== 1 && wrong++ < 3) problems.push(`task ${id} ran ${n} times`);
    }
    if (ran !== created) problems.push(`${ran} task runs, expected ${created} (lost or repeated tasks)`);
    for (const [rank, r] of ranks.entries()) {
      const got = (r.engine.rt.results.final?.[0] as number | undefined) ?? 0;
      if (got !== created) {
        problems.push(`rank ${rank}: result ${got}, expected ${created} (lost partial result)`);
        break;
      }
    }
    if (inFlightTasks.size > 0) problems.push(`${inFlightTasks.size} task message(s) still in flight after the end`);
  }

  const counters: Record<string, number> = {};
  let messages = 0;
  for (const r of ranks) {
    messages += r.engine.rt.stats.messagesSent;
    for (const [k, v] of Object.entries(r.engine.rt.stats.counters)) {
      if (!k.endsWith("Ms")) counters[k] = (counters[k] ?? 0) + v;
    }
  }
  const boundMs = boundOf();
  return {
    params,
    problems: problems.slice(0, 6),
    tasks: created,
    totalWorkMs,
    longestMs,
    boundMs,
    ended: overCount === size,
    makespanMs: rootDoneMs,
    lastTaskMs,
    allDoneMs,
    detectMs: rootDoneMs - lastTaskMs,
    endMs: allDoneMs - lastTaskMs,
    ratio: rootDoneMs / boundMs,
    messages,
    messagesPerTask: messages / Math.max(1, created),
    moved: counters.tasksMovedIn ?? 0,
    counters,
    events: clock.events,
    peakEvents: clock.peak,
    wallSeconds: (performance.now() - wall0) / 1000,
  };
}

/**
 * What the receiver decodes: a copy, so that no rank sees another's later changes to a body. The tasks of a
 * task message (`t`, and `q`) are copied as arrays of the same task objects, which nothing changes: cloning
 * hundreds of thousands of moved tasks deeply was most of a 1024-rank run's time.
 */
function copyBody(body: Record<string, unknown>): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const k in body)
    copy[k] = (k === "t" || k === "q") && Array.isArray(body.t) ? (body[k] as unknown[]).slice() : copyValue(body[k]);
  return copy;
}

/** A deep copy of what a message may hold (numbers, strings, arrays, plain objects); faster than structuredClone. */
function copyValue(v: unknown): unknown {
  if (typeof v !== "object" || v === null) return v;
  if (Array.isArray(v)) return v.map(copyValue);
  if (Object.getPrototypeOf(v) !== Object.prototype) return structuredClone(v);
  const out: Record<string, unknown> = {};
  for (const k in v) out[k] = copyValue((v as Record<string, unknown>)[k]);
  return out;
}

/** A 32-bit hash of two integers (murmur3's finalizer over their mix). */
function mix(a: number, b: number): number {
  let h = Math.imul(a ^ Math.imul(b, 0x85ebca6b), 0xcc9e2d51) ^ (b >>> 7);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

const fmtMs = (ms: number) => `${(ms / 1000).toFixed(3)} s`;
