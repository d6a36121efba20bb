/**
 * An in-process simulation of a distributed pool: N real DistributedEngines (real balancers, partner
 * policies, termination detectors, queues and results) in one thread, joined by simulated channels that a
 * seeded adversarial scheduler drives. At every step the scheduler picks, at random from the seed, one of:
 * deliver any message in flight (any channel, any position: channels may reorder, as the engines allow),
 * let one rank take its next step (run a task, go idle, resume), fire a pending timer (back-offs), run a
 * deferred callback (an outbox flush), or end a rank's slice (flush its outbox). Each seed also draws how
 * eager delivery is and how fast each rank runs, so some schedules starve a rank of messages and others
 * run one rank far ahead. Everything is synchronous and seeded: a schedule replays exactly from its seed.
 *
 * The ranks, their channels and timers are the simulation kernel's (sim/): a rank's steps mirror
 * DistributedEngine's run loop (sim/driver.ts); what is this file's own is the scheduler, the workloads and the
 * checks.
 */
import { seededRandom } from "../../lib/pool/partner/random.ts";
import { DistributedEngine } from "../../lib/pool/distributed/engine.ts";
import { resolvePoolConfig } from "../../lib/pool/options.ts";
import type { PutOptions, TaskContext } from "../../lib/pool/types.ts";
import type { Initiation, PartnerPolicy, TerminationDetector, Topology } from "../../lib/pool/config.ts";
import { RankDriver } from "../../sim/driver.ts";
import { Network } from "../../sim/network.ts";
import { simContext, simRuntime, Settlement } from "../../sim/ranks.ts";
import { HeldTimers } from "../../sim/timers.ts";

/**
 * Workloads. Task ids form trees; a task returns 1, so the run's result counts the tasks that ran.
 * - tree: one root on rank 0, FAN children per task below `tasks`.
 * - spread: one such tree rooted on every rank (of tasks / size tasks each).
 * - pinned: a tree where every third task is pinned to rank id % size (PINNED messages, the outbox).
 * - flat: `tasks` independent tasks put on the last rank; only balancing spreads them.
 * - pingpong: a chain of pinned tasks bouncing between ranks 1 and 2 (the colouring rule's counterexample).
 * - stop: a tree where task `tasks/2` calls ctx.stop(-1): every rank must end stopped with result -1.
 * - fail: a tree where task `tasks/2` throws: every rank must reject (the thrower with its TaskError).
 * - empty: nothing to do.
 * - keyed: a tree whose tasks carry locality keys (five keys; every fourth task none; every sixth task at
 *   priority 1): balancing moves them by key (queue.ts `give`).
 */
export type Workload = "tree" | "spread" | "pinned" | "flat" | "pingpong" | "stop" | "fail" | "empty" | "keyed";
export const WORKLOADS: readonly Workload[] = [
  "tree",
  "spread",
  "pinned",
  "flat",
  "pingpong",
  "stop",
  "fail",
  "empty",
  "keyed",
];

export interface SimParams {
  readonly size: number;
  readonly initiation: Initiation;
  /** Only for the initiations that use one (config.ts PARTNERED). */
  readonly partner?: PartnerPolicy;
  readonly termination: TerminationDetector;
  readonly topology?: Topology;
  readonly workload: Workload;
  /** Tasks in the workload (tree size, flat count, chain length). */
  readonly tasks: number;
  readonly seed: number;
  /** Pool options lowWater / highWater (sender-initiated needs a low highWater to move anything). */
  readonly lowWater?: number;
  readonly highWater?: number;
  /**
   * The tasks put before the run carry distinct priorities (task id + 1), as an app's that puts its tasks with their
   * times as priorities: a dealer of few tasks then runs some on its own turn (receiver.ts `ownTurn`).
   */
  readonly priorities?: boolean;
}

export interface SimOutcome {
  readonly params: SimParams;
  /** Empty when the run was correct; else what went wrong. */
  readonly problems: string[];
  readonly steps: number;
  /** Messages delivered before a message sent earlier on the same channel. */
  readonly overtakes: number;
  /** Sum of every rank's pool counters (blackenings, refusals, treeJoins, ...), times left out. */
  readonly counters: Record<string, number>;
}

/** The put options of task `id` in the keyed workload. */
function keyedOptions(id: number): PutOptions {
  const key = id % 4 === 0 ? undefined : id % 5 === 0 ? "five" : id % 5;
  return { ...(key === undefined ? {} : { key }), priority: id % 6 === 0 ? 1 : 0 };
}

/** Most scheduler steps before a run counts as hung (livelock or lost wake-up). */
const MAX_STEPS = 500_000;
const FAN = 3;

interface Task {
  readonly id: number;
  /** Owner rank for pinned tasks. */
  readonly to?: number;
  /** spread: the first id of this task's tree (ids base..base+per-1). */
  readonly b?: number;
}

interface SimRank {
  readonly engine: DistributedEngine<Task>;
  readonly driver: RankDriver<Task>;
  /** Relative speed: how likely this rank is picked when it can step. */
  readonly speed: number;
  readonly settled: Settlement;
}

/** The replay line printed for a failing schedule. */
export function replayHint(p: SimParams): string {
  return `replay: simulate(${JSON.stringify(p)}) (test/helpers/simulation.ts)`;
}

export async function simulate(params: SimParams): Promise<SimOutcome> {
  const rnd = seededRandom(params.seed * 7919 + 17);
  // Per-schedule adversary: how eager delivery is against running, and each rank's speed.
  const adversary: Adversary = { deliver: 0.05 + rnd() * 0.9, timer: 0.01 + rnd() * 0.2, flush: rnd() * 0.1 };
  const sim = build(params, rnd);
  const steps = schedule(sim, adversary, rnd);
  // Let the engines' done promises settle.
  await new Promise((resolve) => setImmediate(resolve));
  check(params, sim, steps);
  const counters: Record<string, number> = {};
  for (const r of sim.ranks) {
    for (const [k, v] of Object.entries(r.engine.rt.stats.counters)) {
      // Times are the real clock's, not the schedule's: left out, so that a schedule's outcome replays.
      if (!k.endsWith("Ms")) counters[k] = (counters[k] ?? 0) + v;
    }
  }
  return { params, problems: sim.problems.slice(0, 5), steps, overtakes: sim.network.overtakes, counters };
}

/** How likely each kind of step is, against running a rank (1 - deliver). */
interface Adversary {
  readonly deliver: number;
  readonly timer: number;
  readonly flush: number;
}

/** One schedule's ranks, channels and timers, and what its tasks did. */
interface Sim {
  readonly ranks: SimRank[];
  readonly network: Network;
  readonly held: HeldTimers;
  /** Runs of each task, by id. */
  readonly executed: Map<number, number>;
  /** Tasks a correct run runs. */
  readonly expected: number;
  readonly problems: string[];
}

/** The workload's tasks: where they start, the children each puts, and how many run in a correct run. */
function workloadOf({ size, tasks, workload }: SimParams) {
  const per = Math.floor(tasks / size);
  const childrenOf = (task: Task): Task[] => {
    const id = task.id;
    const out: Task[] = [];
    if (workload === "flat" || workload === "empty") return out;
    if (workload === "pingpong") {
      if (id > 0) out.push({ id: id - 1, to: id % 2 === 0 ? 2 % size : 1 % size });
      return out;
    }
    if (workload === "spread") {
      const base = task.b ?? 0;
      const local = id - base;
      for (let c = local * FAN + 1; c <= local * FAN + FAN && c < per; c++) out.push({ id: base + c, b: base });
      return out;
    }
    for (let c = id * FAN + 1; c <= id * FAN + FAN && c < tasks; c++) {
      if (workload === "pinned" && c % 3 === 0) out.push({ id: c, to: c % size });
      else out.push({ id: c });
    }
    return out;
  };
  const initialOf = (rank: number): Task[] => {
    switch (workload) {
      case "empty":
        return [];
      case "flat":
        return rank === size - 1 ? Array.from({ length: tasks }, (_, id) => ({ id })) : [];
      case "pingpong":
        return rank === 0 ? [{ id: tasks - 1, to: (tasks - 1) % 2 === 0 ? 2 % size : 1 % size }] : [];
      case "spread":
        return per > 0 ? [{ id: rank * per, b: rank * per }] : [];
      default:
        return rank === 0 ? [{ id: 0 }] : [];
    }
  };
  const expected = workload === "empty" ? 0 : workload === "spread" ? per * size : tasks;
  return { childrenOf, initialOf, expected };
}

/** The ranks: a real engine each, on the kernel's channels and timers; each draws its speed from `rnd`. */
function build(params: SimParams, rnd: () => number): Sim {
  const { size, tasks, workload } = params;
  const config = resolvePoolConfig(
    {
      mode: "distributed",
      initiation: params.initiation,
      ...(params.partner !== undefined ? { partner: params.partner } : {}),
      ...(params.topology !== undefined ? { topology: params.topology } : {}),
      termination: params.termination,
      seed: params.seed,
      ...(params.lowWater !== undefined ? { lowWater: params.lowWater } : {}),
      ...(params.highWater !== undefined ? { highWater: params.highWater } : {}),
    },
    undefined,
    size,
  );
  const { childrenOf, initialOf, expected } = workloadOf(params);
  const sim: Sim = {
    ranks: [],
    network: new Network(size),
    held: new HeldTimers(),
    executed: new Map(),
    expected,
    problems: [],
  };
  const { executed, problems } = sim;
  const stopAt = Math.floor(tasks / 2);
  for (let rank = 0; rank < size; rank++) {
    const link = sim.network.link(rank, (dest, tag) => {
      if (dest < 0 || dest >= size || dest === rank) problems.push(`rank ${rank} sent tag ${tag} to rank ${dest}`);
      return true;
    });
    const ctx = simContext<Task>(
      rank,
      (task, o) => engine.put(task, o?.priority ?? 0, o?.to ?? task.to, true, o?.key),
      (result) => engine.stop(result === undefined ? undefined : [result]),
    );
    const handler = (task: Task, c: TaskContext<Task>): number => {
      executed.set(task.id, (executed.get(task.id) ?? 0) + 1);
      if (task.to !== undefined && task.to !== rank)
        problems.push(`pinned task ${task.id} ran on ${rank}, not ${task.to}`);
      if (workload === "stop" && task.id === stopAt) c.stop(-1);
      if (workload === "fail" && task.id === stopAt) throw new RangeError(`task ${task.id} is bad`);
      for (const child of childrenOf(task)) {
        if (workload === "keyed") c.put(child, keyedOptions(child.id));
        else c.put(child, child.to !== undefined ? { to: child.to } : undefined);
      }
      return 1;
    };
    const initial = initialOf(rank).map((task) => ({
      task,
      priority: params.priorities ? task.id + 1 : 0,
      to: task.to,
    }));
    const timers = sim.held.for(rank);
    const engine = new DistributedEngine<Task>(simRuntime(link, config), handler, ctx, initial, timers);
    const driver = new RankDriver(engine, false);
    sim.ranks.push({ engine, driver, speed: 0.1 + rnd(), settled: new Settlement(engine.done) });
  }
  return sim;
}

/** Runs the schedule the seed picks until nothing is left to happen (or MAX_STEPS); returns the steps taken. */
function schedule(sim: Sim, adversary: Adversary, rnd: () => number): number {
  const { ranks, network, held } = sim;
  const { inFlight } = network;
  const { timers, soons } = held;
  let steps = 0;
  for (; steps < MAX_STEPS; steps++) {
    const runnable = ranks.filter((r) => r.driver.runnable && !r.engine.over);
    for (const r of ranks) if (r.engine.over) r.driver.runnable = false;
    const canDeliver = inFlight.length > 0;
    const canTimer = timers.size > 0;
    const canSoon = soons.length > 0;
    if (runnable.length === 0 && !canDeliver && !canTimer && !canSoon) break;
    const wDeliver = canDeliver ? adversary.deliver : 0;
    const wRun = runnable.length > 0 ? 1 - adversary.deliver : 0;
    const wTimer = canTimer ? adversary.timer : 0;
    const wSoon = canSoon ? 0.1 : 0;
    const wFlush = runnable.length > 0 ? adversary.flush : 0;
    let pick = rnd() * (wDeliver + wRun + wTimer + wSoon + wFlush);
    if ((pick -= wDeliver) < 0) {
      const m = network.take(Math.floor(rnd() * inFlight.length));
      network.arrived(m);
      (ranks[m.dest] as SimRank).engine.onMessage(m.source, m.tag, m.body);
    } else if ((pick -= wRun) < 0) {
      bySpeed(runnable, rnd).driver.advance();
    } else if ((pick -= wTimer) < 0) {
      const ids = [...timers.keys()];
      held.take(ids[Math.floor(rnd() * ids.length)] as number).fn();
    } else if ((pick -= wSoon) < 0) {
      held.takeSoon().fn();
    } else {
      const r = runnable[Math.floor(rnd() * runnable.length)] as SimRank;
      r.engine.flush();
    }
  }
  return steps;
}

/** One of the ranks that can step, each as likely as its speed. */
export function bySpeed<R extends { readonly speed: number }>(runnable: readonly R[], rnd: () => number): R {
  let total = 0;
  for (const r of runnable) total += r.speed;
  let x = rnd() * total;
  for (const r of runnable) if ((x -= r.speed) < 0) return r;
  return runnable[runnable.length - 1] as R;
}

/** What a correct run ends with, per workload; what differs goes into `sim.problems`. */
function check(params: SimParams, sim: Sim, steps: number): void {
  const { workload } = params;
  const { ranks, problems, executed } = sim;
  if (steps >= MAX_STEPS) problems.push(`no end after ${MAX_STEPS} steps (livelock?)`);
  const finals = ranks.map((r) => r.engine.rt.results.final?.[0]);
  const pending = ranks.filter((r) => r.settled.state === "pending").length;
  if (pending > 0 && steps < MAX_STEPS)
    problems.push(`${pending} rank(s) never ended: a hang (lost wake-up or message)`);
  if (workload === "fail") {
    const errors = ranks.map((r) => r.settled.error);
    const thrower = errors.find((e) => e?.name === "TaskError" && /is bad/.test(String(e?.cause)));
    if (!thrower) problems.push("no rank rejected with the task's TaskError");
    for (const [rank, r] of ranks.entries())
      if (r.settled.state !== "rejected") problems.push(`rank ${rank}: ${r.settled.state}, not rejected`);
  } else {
    for (const [rank, { settled }] of ranks.entries()) {
      if (settled.state === "rejected") problems.push(`rank ${rank} rejected: ${settled.error?.message}`);
    }
  }
  if (workload === "stop") {
    for (const [rank, r] of ranks.entries()) {
      if (!r.engine.rt.stopped) problems.push(`rank ${rank} did not end stopped`);
      if (finals[rank] !== -1) problems.push(`rank ${rank}: stop result ${String(finals[rank])}, not -1`);
    }
  }
  if (workload !== "stop" && workload !== "fail" && problems.length === 0) {
    const want = sim.expected;
    let ran = 0;
    for (const [id, n] of executed) {
      ran += n;
      if (n !== 1) problems.push(`task ${id} ran ${n} times`);
    }
    if (ran !== want) problems.push(`${ran} task runs, expected ${want} (lost tasks)`);
    for (const [rank, v] of finals.entries()) {
      const got = v ?? 0;
      if (got !== want) problems.push(`rank ${rank}: result ${String(got)}, expected ${want} (lost partial result)`);
    }
    const left = sim.network.inFlight.filter((m) => (m.body.t as unknown[] | undefined)?.length);
    if (left.length > 0) problems.push(`${left.length} task message(s) still in flight after the end`);
  }
}
