/**
 * A timed, in-process simulation of the distributed pool: N real DistributedEngines (real balancers, partner
 * policies, termination detectors, queues and results) in one thread, driven by a virtual clock (clock.ts).
 * The untimed sibling, test/helpers/simulation.ts, hunts for wrong answers under adversarial orders; this
 * one asks how long a run takes, at sizes no machine here can launch (1024 ranks):
 *
 * - Each task has a simulated duration (the workload gives it: workload.ts). A rank runs one task at a time
 *   and, like the emulated real runs (whose tasks are timed waits), handles the messages and timers that fall
 *   due while its task runs. The handler itself runs when the task's time is up (so a tree task puts its
 *   children at its end, as bench/programs/trees-ranks.ts's emulated nodes do).
 * - Messages take time in flight and CPU at both ends, on FIFO channels; ranks start at seeded times spread
 *   over `startSkewMs` (latency.ts). (Tasks are timed waits, as in the emulated real runs: they take no CPU,
 *   and a rank handles messages while one runs.)
 * - Timers (the engine's `Timers` seam) fire at virtual times, at least 1 ms after they are set, as Node's do.
 *
 * The ranks are the simulation kernel's (sim/): between events a rank's steps mirror DistributedEngine's run
 * loop (sim/driver.ts: open, afterTask, next, execute, settle, park), as in the untimed simulations; a task
 * handed out ends `ms` later on the clock. The engine also reads the real clock (Executor statistics,
 * `lastActivityAt`): harmless here (only latency counters use it); every figure comes from the virtual clock.
 *
 * Outcome: makespan (when the root detected termination, as the real bench times it on rank 0), the bound
 * max(total work / ranks, longest task; for a tree, longest root-to-leaf chain of durations), pool messages
 * per task, tasks moved, and an exactly-once check (every task ran once; every rank's result counts them all).
 */
import type { PoolConfig, TaskContext } from "../../lib/index.ts";
import {
  comboFromName,
  DistributedEngine,
  type PoolLink,
  type PoolOptions,
  resolvePoolConfig,
  seededRandom,
  type Timers,
} from "../../lib/internal.ts";
import { RankDriver } from "../../sim/driver.ts";
import { copyBody } from "../../sim/network.ts";
import { simContext, simRuntime, Settlement } from "../../sim/ranks.ts";
import { registered } from "../combos.ts";
import { type ClockEvent, VirtualClock } from "./clock.ts";
import { DEFAULT_LATENCY, type Latency, Wire } from "./latency.ts";
import { runIdeal, type SimTask, TimedWork, type TimedWorkload } from "./workload.ts";

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
   * `"oldest"`: the same, oldest task first (breadth-first: a tree unfolds sooner).
   */
  readonly ideal?: boolean | "oldest";
  /**
   * A look inside, for diagnosis: every `everyMs` of virtual time, `fn` gets the time and each rank's load (tasks
   * queued and running). It does not change the run.
   */
  readonly probe?: {
    readonly everyMs: number;
    readonly fn: (nowMs: number, loads: readonly number[], engines: readonly unknown[]) => void;
  };
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

interface SimRank {
  readonly driver: RankDriver<SimTask>;
  readonly settled: Settlement;
  /** The run has ended here (counted in `over`). */
  over: boolean;
}

const DEFAULT_MAX_RATIO = 5;

export async function simulateTimed(params: TimedParams): Promise<TimedOutcome> {
  const wall0 = performance.now();
  const config = configOf(params);
  const { size, seed } = params;
  const clock = new VirtualClock();
  const work = new TimedWork(size, params.workload, params.workPerRankMs, seed, params.workSeed);
  if (params.ideal) {
    runIdeal(work, size, clock, params.ideal === "oldest");
    const problems = work.ran === work.created ? [] : [`${work.ran} task runs, expected ${work.created}`];
    const at = work.lastTaskMs;
    return outcomeOf(params, work, clock, wall0, problems, { ended: true, rootDoneMs: at, allDoneMs: at });
  }

  const latency = params.latency ?? DEFAULT_LATENCY;
  const run = new TimedRun(params, config, clock, new Wire(latency, size, seed, clock), work);
  // A run that takes this long (virtual) has lost its way: a livelock, or balancing gone very wrong.
  const maxRatio = params.maxRatio ?? DEFAULT_MAX_RATIO;
  const limit = maxRatio * Math.max(params.workPerRankMs, work.bound()) + 1000;
  run.start(latency.startSkewMs ?? 0);
  if (params.probe) run.sample(params.probe);
  while (run.overCount < size && clock.step(limit));
  // Let the engines' done promises settle.
  await new Promise((resolve) => setImmediate(resolve));

  const problems = run.problems;
  if (run.overCount < size) {
    const running = run.ranks.filter((r) => !r.over).length;
    const { ran, created, lastTaskMs } = work;
    problems.push(
      clock.now >= limit || clock.pending().some((ev) => ev.fn !== undefined)
        ? `no end by ${fmtMs(limit)} virtual (${maxRatio}x the work per rank): ${ran} of ${created} tasks run, ` +
            `last at ${fmtMs(lastTaskMs)}; ${running} rank(s) still running (a livelock, or balancing that barely spreads the work)`
        : `hang at ${fmtMs(clock.now)} virtual: nothing left to happen, ${running} rank(s) never ended (lost wake-up or message)`,
    );
  }
  for (const [rank, { settled }] of run.ranks.entries()) {
    if (settled.state === "rejected") problems.push(`rank ${rank} rejected: ${settled.error?.message}`);
  }
  if (problems.length === 0) checkExactlyOnce(run, work);
  const { overCount, rootDoneMs, allDoneMs } = run;
  return outcomeOf(params, work, clock, wall0, problems, { ended: overCount === size, rootDoneMs, allDoneMs }, run);
}

/** The pool's configuration for `params`, after checking them. */
function configOf(params: TimedParams): PoolConfig {
  const { size } = params;
  const combo = comboFromName(params.combo);
  if (!combo) throw new Error(`simulateTimed: unknown combination \`${params.combo}\` (see comboName in config.ts)`);
  if (!registered(combo))
    throw new Error(`simulateTimed: combination \`${params.combo}\` names a strategy not in the registries yet`);
  if (!Number.isInteger(size) || size < 2) throw new Error(`simulateTimed: size must be an integer >= 2; got ${size}`);
  if (!(params.workPerRankMs > 0))
    throw new Error(`simulateTimed: workPerRankMs must be > 0; got ${params.workPerRankMs}`);
  return resolvePoolConfig(
    { ...params.options, mode: "distributed", ...combo, seed: params.options?.seed ?? params.seed },
    undefined,
    size,
  );
}

/** Every task ran once, every rank's result counts them all, and no task message is left in flight. */
function checkExactlyOnce(run: TimedRun, work: TimedWork): void {
  const { problems } = run;
  const { created, executed } = work;
  let wrong = 0;
  for (let id = 0; id < created; id++) {
    const n = executed[id] ?? 0;
    if (n !== 1 && wrong++ < 3) problems.push(`task ${id} ran ${n} times`);
  }
  if (work.ran !== created) problems.push(`${work.ran} task runs, expected ${created} (lost or repeated tasks)`);
  for (const [rank, r] of run.ranks.entries()) {
    const got = (r.driver.engine.rt.results.final?.[0] as number | undefined) ?? 0;
    if (got !== created) {
      problems.push(`rank ${rank}: result ${got}, expected ${created} (lost partial result)`);
      break;
    }
  }
  const left = run.inFlightTasks.size;
  if (left > 0) problems.push(`${left} task message(s) still in flight after the end`);
}

/** The simulated ranks of one timed run, on the clock and the wire: their engines, drivers and ends. */
class TimedRun {
  readonly problems: string[] = [];
  readonly ranks: SimRank[] = [];
  /** Ranks where the run has ended; when the root detected termination, and when the last rank learnt it. */
  overCount = 0;
  rootDoneMs = Number.NaN;
  allDoneMs = Number.NaN;
  /** Task messages not yet handled: counted to catch tasks left in flight after the end. */
  readonly inFlightTasks = new Set<ClockEvent>();
  private taskMessages = 0;

  constructor(
    private readonly params: TimedParams,
    config: PoolConfig,
    private readonly clock: VirtualClock,
    private readonly wire: Wire,
    private readonly work: TimedWork,
  ) {
    for (let rank = 0; rank < params.size; rank++) this.ranks.push(this.rank(rank, config));
    work.initial.length = 0;
  }

  /** Calls `probe.fn` every `probe.everyMs` of virtual time while the run lasts. */
  sample(probe: NonNullable<TimedParams["probe"]>): void {
    const tick = () => {
      if (this.overCount === this.params.size) return;
      probe.fn(
        this.clock.now,
        this.ranks.map((r) => r.driver.engine.load),
        this.ranks.map((r) => r.driver.engine),
      );
      this.clock.at(this.clock.now + probe.everyMs, tick);
    };
    this.clock.at(probe.everyMs, tick);
  }

  /** Starts every rank, at seeded times spread over `skew` ms (or all now, in rank order). */
  start(skew: number): void {
    const starts = seededRandom(this.params.seed * 104_729 + 7);
    for (let rank = 0; rank < this.params.size; rank++) {
      if (skew > 0) {
        const t = starts() * skew;
        this.wire.startAt(rank, t);
        this.clock.at(t, () => this.stretch(rank));
      } else this.clock.soon(() => this.stretch(rank));
    }
  }

  private rank(rank: number, config: PoolConfig): SimRank {
    const { clock, work, problems } = this;
    const ctx: TaskContext<SimTask> = simContext(
      rank,
      (task, o) => engine.put(task, o?.priority ?? 0, o?.to),
      () => problems.push(`rank ${rank}: a task called ctx.stop (no workload here does)`),
      () => problems.push(`rank ${rank}: a task called ctx.give (no workload here does)`),
    );
    const handler = (task: SimTask, c: TaskContext<SimTask>): number => {
      const children = work.run(task);
      if (children !== undefined) for (const child of children) c.put(child);
      return 1;
    };
    const timers: Timers = {
      after: (ms, fn) => {
        const ev = clock.at(clock.now + Math.max(1, ms), () => this.onRank(rank, fn));
        return () => {
          ev.fn = undefined;
        };
      },
      soon: (fn) => clock.soon(() => this.onRank(rank, fn)),
      now: () => clock.now,
    };
    const start = (work.initial[rank] as SimTask[]).map((task) => ({ task, priority: 0, to: undefined }));
    const rt = simRuntime(this.link(rank), config);
    const engine: DistributedEngine<SimTask> = new DistributedEngine<SimTask>(rt, handler, ctx, start, timers);
    // A parked or gated rank resumes once woken, after the callback that woke it, as a real rank's loop does.
    const driver = new RankDriver(engine, true, () => clock.soon(() => this.stretch(rank)));
    return { driver, settled: new Settlement(engine.done), over: false };
  }

  /** Rank `rank`'s end of the wire: a message copied now, handled when it has arrived and the CPU took it. */
  private link(rank: number): PoolLink {
    const { size, loseTaskMessage } = this.params;
    return {
      rank,
      size,
      send: (dest, tag, body) => {
        if (dest < 0 || dest >= size || dest === rank || !Number.isInteger(dest)) {
          this.problems.push(`rank ${rank} sent tag ${tag} to rank ${dest}`);
          return 0;
        }
        const copy = copyBody(body);
        const carried = (copy.t as unknown[] | undefined)?.length ?? 0;
        if (carried > 0 && ++this.taskMessages === loseTaskMessage) return 0;
        const t = this.wire.arrival(rank, dest, carried);
        const ev: ClockEvent = this.clock.at(t, () => this.deliver(rank, dest, tag, copy, ev));
        if (carried > 0) this.inFlightTasks.add(ev);
        return 0;
      },
    };
  }

  /** A message arrived: the receiver handles it once its CPU has taken it (after earlier ones: FIFO kept). */
  private deliver(source: number, dest: number, tag: number, body: Record<string, unknown>, ev: ClockEvent): void {
    const at = this.wire.received(dest);
    if (at === undefined) return this.handle(source, dest, tag, body, ev);
    const later: ClockEvent = this.clock.at(at, () => this.handle(source, dest, tag, body, later));
    if (this.inFlightTasks.delete(ev)) this.inFlightTasks.add(later);
  }

  private handle(source: number, dest: number, tag: number, body: Record<string, unknown>, ev: ClockEvent): void {
    this.inFlightTasks.delete(ev);
    const engine = (this.ranks[dest] as SimRank).driver.engine;
    this.onRank(dest, () => engine.onMessage(source, tag, body));
  }

  /**
   * One stretch of rank r's run loop (sim/driver.ts), from its start, a wake-up or the end of a task, to the
   * start of its next task (which ends `ms` later) or its parking.
   */
  private stretch(rank: number): void {
    const driver = (this.ranks[rank] as SimRank).driver;
    this.onRank(rank, () => {
      for (;;) {
        const step = driver.step();
        if (step === "task") {
          this.clock.at(this.clock.now + (driver.running as SimTask).ms, () => this.end(rank));
          return;
        }
        if (!driver.runnable) return;
      }
    });
  }

  private end(rank: number): void {
    const driver = (this.ranks[rank] as SimRank).driver;
    const now = this.clock.now;
    if (now > this.work.lastTaskMs) this.work.lastTaskMs = now;
    let more = true;
    this.onRank(rank, () => {
      driver.end();
      if (driver.engine.over) more = false;
    });
    if (more) this.stretch(rank);
  }

  /** Runs a callback of rank r's: a throw is the engine's failure, as it would crash a real rank. */
  private onRank(rank: number, fn: () => void): void {
    const sr = this.ranks[rank] as SimRank;
    try {
      fn();
    } catch (e) {
      this.problems.push(`rank ${rank} threw at ${this.clock.now.toFixed(3)} ms: ${(e as Error).message}`);
      sr.driver.engine.fail(e as Error);
    }
    // Did the run end there?
    if (sr.over || !sr.driver.engine.over) return;
    sr.over = true;
    this.overCount++;
    if (rank === 0) this.rootDoneMs = this.clock.now;
    if (this.overCount === this.params.size) this.allDoneMs = this.clock.now;
  }
}

function outcomeOf(
  params: TimedParams,
  work: TimedWork,
  clock: VirtualClock,
  wall0: number,
  problems: string[],
  end: { readonly ended: boolean; readonly rootDoneMs: number; readonly allDoneMs: number },
  run?: TimedRun,
): TimedOutcome {
  const counters: Record<string, number> = {};
  let messages = 0;
  for (const r of run?.ranks ?? []) {
    const { stats } = r.driver.engine.rt;
    messages += stats.messagesSent;
    for (const [k, v] of Object.entries(stats.counters)) {
      if (!k.endsWith("Ms")) counters[k] = (counters[k] ?? 0) + v;
    }
  }
  const { created, lastTaskMs } = work;
  const boundMs = work.bound();
  // The ideal scheduler has no detection: it ends with its last task.
  const ideal = run === undefined;
  return {
    params,
    problems: problems.slice(0, 6),
    tasks: created,
    totalWorkMs: work.totalWorkMs,
    longestMs: work.longestMs,
    boundMs,
    ended: end.ended,
    makespanMs: end.rootDoneMs,
    lastTaskMs,
    allDoneMs: end.allDoneMs,
    detectMs: ideal ? 0 : end.rootDoneMs - lastTaskMs,
    endMs: ideal ? 0 : end.allDoneMs - lastTaskMs,
    ratio: end.rootDoneMs / boundMs,
    messages,
    messagesPerTask: ideal ? 0 : messages / Math.max(1, created),
    moved: counters.tasksMovedIn ?? 0,
    counters,
    events: clock.events,
    peakEvents: clock.peak,
    wallSeconds: (performance.now() - wall0) / 1000,
  };
}

const fmtMs = (ms: number) => `${(ms / 1000).toFixed(3)} s`;
