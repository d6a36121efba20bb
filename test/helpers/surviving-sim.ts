/**
 * An in-process simulation of a distributed pool that survives deaths (`retries`, lib/pool/distributed/
 * resilient.ts): N real ResilientDistributed engines (real balancers, queues, ledger) in one thread, joined by
 * simulated channels that a seeded adversarial scheduler drives, as test/helpers/simulation.ts does for the
 * plain pool. At every step it picks, from the seed, one of: deliver any message in flight (channels reorder),
 * let one rank take its next step (open, run a task, go idle, resume), fire a timer, run a deferred callback, end a
 * rank's slice (flush its outbox), kill a rank (not the root), or tell one live rank of a death. A killed
 * rank sends nothing more; each message it had in flight is lost or still arrives, as the seed says, until
 * its receiver learns of the death (then the receiver drops it, as the messaging layer does). Every rank
 * learns of every death, in the order they happened, each at a moment of its own.
 *
 * The ranks, their channels and timers are the simulation kernel's (sim/); this file's own are the deaths, the
 * scheduler, the workloads and the checks.
 *
 * Each task returns 1 and the tasks form a tree, so a run is exact iff every live rank's result is the
 * number of tasks: a task's value or puts counted twice, or lost, changes it. Tasks may run more than once
 * (the work a dead rank did since its last commit is done again).
 */
import { seededRandom } from "../../lib/pool/partner/random.ts";
import type { Entry } from "../../lib/pool/distributed/ledger.ts";
import { COMMIT_TAG, ResilientDistributed } from "../../lib/pool/distributed/resilient.ts";
import { RankFailedError } from "../../lib/errors.ts";
import { type PoolConfig, resolvePoolConfig } from "../../lib/pool/options.ts";
import type { PutOptions, TaskContext } from "../../lib/pool/types.ts";
import type { Initiation, TerminationDetector } from "../../lib/pool/config.ts";
import { RankDriver } from "../../sim/driver.ts";
import { bySpeed } from "./simulation.ts";
import { type InFlight, Network } from "../../sim/network.ts";
import { simContext, simRuntime, Settlement } from "../../sim/ranks.ts";
import { type Held, HeldTimers } from "../../sim/timers.ts";

/**
 * - tree: one root on rank 0, FAN children per task below `tasks`.
 * - spread: one such tree rooted on every rank (on ranks that may die: their first commit carries it).
 * - pinned: a tree where every third task is pinned to rank id % size (some to ranks that die).
 * - flat: `tasks` independent tasks put on the last rank; only balancing spreads them.
 * - keyed: a tree whose tasks carry locality keys and some priorities.
 */
export type SurvivingWorkload = "tree" | "spread" | "pinned" | "flat" | "keyed";
export const SURVIVING_WORKLOADS: readonly SurvivingWorkload[] = ["tree", "spread", "pinned", "flat", "keyed"];

/** What a rank did last before it was killed (the step kinds the kills must cover). */
export type StepKind =
  "open" | "task" | "idle" | "resume" | "standby" | "message" | "timer" | "soon" | "flush" | "notice" | "none";

export interface SurvivingParams {
  readonly size: number;
  readonly initiation: Initiation;
  readonly termination: TerminationDetector;
  readonly workload: SurvivingWorkload;
  readonly tasks: number;
  readonly kills: number;
  readonly seed: number;
  /** 0: a commit at the start of every task; otherwise only when idle, before transfers and on deaths. */
  readonly commitMs: number;
  /**
   * Channels as ZeroMQ's between two ranks: each delivers in the order sent, and a killed rank's lost messages
   * are the last ones of each of its channels (the link says `fifo`). Otherwise any message overtakes any, and
   * each of a killed rank's is lost or not on its own.
   */
  readonly fifo?: boolean;
}

export interface SurvivingOutcome {
  readonly problems: string[];
  readonly steps: number;
  readonly killed: number[];
  /** What each killed rank did last before its death. */
  readonly killedAfter: StepKind[];
  readonly redealt: number;
  /** Transfers to the root that left with their commit, not after its ACK (ordered channels only). */
  readonly toRootAtOnce: number;
  /** Handler runs beyond one per task: work done again. */
  readonly rerun: number;
  readonly overtakes: number;
}

export function survivingReplayHint(p: SurvivingParams): string {
  return `replay: simulateSurviving(${JSON.stringify(p)}) (test/helpers/surviving-sim.ts)`;
}

const MAX_STEPS = 500_000;
const FAN = 3;

interface Task {
  readonly id: number;
  readonly to?: number;
  readonly b?: number;
}

interface SimRank {
  readonly pool: ResilientDistributed<Task>;
  /** Drives the wrapped engine, whose tasks are the ledger's entries. */
  readonly driver: RankDriver<Entry<Task>>;
  readonly speed: number;
  dead: boolean;
  last: StepKind;
  /** Deaths this rank has not been told of yet, in order. */
  readonly notices: number[];
  readonly settled: Settlement;
}

export async function simulateSurviving(p: SurvivingParams): Promise<SurvivingOutcome> {
  const rnd = seededRandom(p.seed * 6271 + 29);
  const adversary: Adversary = {
    deliver: 0.05 + rnd() * 0.9,
    timer: 0.01 + rnd() * 0.2,
    flush: rnd() * 0.1,
    notice: 0.02 + rnd() * 0.5,
  };
  const run = new SurvivingRun(p, rnd);
  let steps = 0;
  for (; steps < MAX_STEPS; steps++) if (!run.step(adversary)) break;
  await new Promise((resolve) => setImmediate(resolve));
  return run.outcome(steps);
}

/** How likely each kind of step is, against running a rank (1 - deliver). */
interface Adversary {
  readonly deliver: number;
  readonly timer: number;
  readonly flush: number;
  readonly notice: number;
}

/** One schedule: the ranks on the kernel's channels and timers, the deaths, and what the tasks did. */
class SurvivingRun {
  readonly ranks: SimRank[] = [];
  private readonly network: Network;
  private readonly held = new HeldTimers();
  /** Runs of each task, by id, and in all. */
  private readonly executed = new Map<number, number>();
  private ran = 0;
  private readonly problems: string[] = [];
  private readonly killed: number[] = [];
  private readonly killedAfter: StepKind[] = [];
  /** Ranks whose first commit the root has taken. */
  private readonly reachedRoot = new Set<number>();
  /** Kill points: after this many task runs in all, one each. */
  private readonly killPoints: number[];
  private readonly expected: number;

  constructor(
    private readonly p: SurvivingParams,
    private readonly rnd: () => number,
  ) {
    const { size, tasks } = p;
    this.network = new Network(size);
    this.killPoints = Array.from({ length: p.kills }, () => Math.floor(rnd() * tasks)).sort((a, b) => a - b);
    const config = resolvePoolConfig(
      { mode: "distributed", initiation: p.initiation, termination: p.termination, seed: p.seed, retries: 1 },
      undefined,
      size,
    );
    const per = Math.floor(tasks / size);
    this.expected = p.workload === "spread" ? per * size : tasks;
    for (let rank = 0; rank < size; rank++) this.ranks.push(this.rank(rank, config, per));
  }

  private rank(rank: number, config: PoolConfig, per: number): SimRank {
    const { size, workload } = this.p;
    const { ranks, problems, executed, killed } = this;
    const admit = (dest: number, tag: number): boolean => {
      if (dest < 0 || dest >= size || dest === rank) problems.push(`rank ${rank} sent tag ${tag} to rank ${dest}`);
      if ((ranks[rank] as SimRank | undefined)?.dead) problems.push(`dead rank ${rank} sent tag ${tag}`);
      return true;
    };
    const link = this.network.link(rank, admit, this.p.fifo === true);
    const ctx = simContext<Task>(
      rank,
      (task, o) => pool.put(task, o?.priority ?? 0, o?.to, true, o?.key),
      (result) => pool.stop(result === undefined ? undefined : [result]),
    );
    const handler = (task: Task, c: TaskContext<Task>): number => {
      executed.set(task.id, (executed.get(task.id) ?? 0) + 1);
      this.ran++;
      if (task.to !== undefined && task.to !== rank && !(ranks[task.to] as SimRank).dead) {
        // A task pinned to a live rank runs there, unless its rank had died when it was sent (then anywhere).
        const lost = killed.length > 0;
        if (!lost) problems.push(`pinned task ${task.id} ran on ${rank}, not ${task.to}`);
      }
      for (const child of childrenOf(task, this.p, per)) c.put(child, optionsOf(child, workload));
      return 1;
    };
    const start = initialOf(rank, this.p, per).map((task) => ({ task, priority: 0, to: task.to }));
    const timers = this.held.for(rank);
    const pool = new ResilientDistributed<Task>(simRuntime(link, config), handler, ctx, start, timers, this.p.commitMs);
    const driver = new RankDriver(pool.engine, false);
    return {
      pool,
      driver,
      speed: 0.1 + this.rnd(),
      dead: false,
      last: "none",
      notices: [],
      settled: new Settlement(pool.done),
    };
  }

  /** One step of the schedule the seed picks; false when nothing is left to happen. */
  step(adversary: Adversary): boolean {
    const { ranks, network, held, rnd, p } = this;
    const { inFlight } = network;
    const workload = p.workload;
    for (const r of ranks) if (r.pool.engine.over || r.dead) r.driver.runnable = false;
    const live = ranks.filter((r) => !r.dead);
    const runnable = live.filter((r) => r.driver.runnable);
    const noticed = live.filter((r) => r.notices.length > 0);
    // spread, flat: the app's puts on a rank count once its first commit has reached the root (docs/survival.md).
    const victims = ranks.filter(
      (r, i) =>
        i !== 0 &&
        !r.dead &&
        !r.pool.engine.over &&
        ((workload !== "spread" && workload !== "flat") || this.reachedRoot.has(i)),
    );
    const killPoints = this.killPoints;
    const wantKill = killPoints.length > 0 && this.ran >= (killPoints[0] as number) && victims.length > 1;
    held.forget((rank) => (ranks[rank] as SimRank).dead);
    const liveTimers = [...held.timers];
    const soons = held.soons;
    if (
      runnable.length === 0 &&
      inFlight.length === 0 &&
      liveTimers.length === 0 &&
      soons.length === 0 &&
      noticed.length === 0 &&
      !wantKill
    )
      return false;
    if (wantKill) {
      killPoints.shift();
      const i = Math.floor(rnd() * victims.length);
      const victim = victims[i] as SimRank;
      this.kill(victim, ranks.indexOf(victim));
      return true;
    }
    const wDeliver = inFlight.length > 0 ? adversary.deliver : 0;
    const wRun = runnable.length > 0 ? 1 - adversary.deliver : 0;
    const wTimer = liveTimers.length > 0 ? adversary.timer : 0;
    const wSoon = soons.length > 0 ? 0.1 : 0;
    const wFlush = runnable.length > 0 ? adversary.flush : 0;
    const wNotice = noticed.length > 0 ? adversary.notice : 0;
    let pick = rnd() * (wDeliver + wRun + wTimer + wSoon + wFlush + wNotice);
    if ((pick -= wDeliver) < 0) {
      this.deliver(Math.floor(rnd() * inFlight.length));
    } else if ((pick -= wRun) < 0) {
      const r = bySpeed(runnable, rnd);
      const kind = r.driver.advance();
      if (kind !== undefined && kind !== "over") r.last = kind;
    } else if ((pick -= wTimer) < 0) {
      const t = held.take((liveTimers[Math.floor(rnd() * liveTimers.length)] as [number, Held])[0]);
      (ranks[t.rank] as SimRank).last = "timer";
      t.fn();
    } else if ((pick -= wSoon) < 0) {
      const s = held.takeSoon();
      (ranks[s.rank] as SimRank).last = "soon";
      s.fn();
    } else if ((pick -= wFlush) < 0) {
      const r = runnable[Math.floor(rnd() * runnable.length)] as SimRank;
      r.last = "flush";
      r.pool.engine.flush();
    } else {
      const r = noticed[Math.floor(rnd() * noticed.length)] as SimRank;
      const dead = r.notices.shift() as number;
      r.last = "notice";
      // From now on this rank drops what the dead one sent (the messaging layer does).
      r.pool.onPeerDead(dead, new RankFailedError(dead, `rank ${dead} died (simulated)`));
    }
    return true;
  }

  /** The message at position `i` arrives (with ordered channels, the oldest of its channel), unless to the dead. */
  private deliver(i: number): void {
    const network = this.network;
    const m = network.take(this.p.fifo ? network.oldestOnChannel(i) : i);
    network.arrived(m);
    const to = this.ranks[m.dest] as SimRank;
    if (to.dead) return;
    if (m.dest === 0 && m.tag === COMMIT_TAG && m.body.s === 1 && !to.notices.includes(m.source)) {
      this.reachedRoot.add(m.source);
    }
    to.last = "message";
    to.pool.onMessage(m.source, m.tag, m.body);
  }

  private kill(victim: SimRank, rank: number): void {
    const { inFlight } = this.network;
    victim.dead = true;
    victim.driver.runnable = false;
    this.killed.push(rank);
    this.killedAfter.push(victim.last);
    // What it had in flight: each message lost in its socket, or still on its way, as the seed says (with
    // ordered channels, the messages after the first lost one on a channel are lost too).
    const cut = new Map<number, number>();
    for (let i = 0; i < inFlight.length; i++) {
      const m = inFlight[i] as InFlight;
      if (m.source !== rank) continue;
      if (!this.p.fifo) {
        if (this.rnd() < 0.5) inFlight.splice(i--, 1);
      } else if (!cut.has(m.dest) && this.rnd() < 0.5) cut.set(m.dest, m.seq);
    }
    for (let i = inFlight.length - 1; i >= 0; i--) {
      const m = inFlight[i] as InFlight;
      if (m.source === rank && m.seq >= (cut.get(m.dest) ?? Number.POSITIVE_INFINITY)) inFlight.splice(i, 1);
    }
    for (const r of this.ranks) if (!r.dead) r.notices.push(rank);
  }

  /** What a correct run ends with: every live rank resolved with the exact count, every task run. */
  outcome(steps: number): SurvivingOutcome {
    const { problems, expected, executed } = this;
    if (steps >= MAX_STEPS) problems.push(`no end after ${MAX_STEPS} steps (livelock?)`);
    let redealt = 0;
    let toRootAtOnce = 0;
    for (const [rank, r] of this.ranks.entries()) {
      redealt += r.pool.engine.rt.stats.counters.tasksRedealt ?? 0;
      toRootAtOnce += r.pool.engine.rt.stats.counters.transfersToRootAtOnce ?? 0;
      if (r.dead) continue;
      const { state, error } = r.settled;
      if (state === "pending" && steps < MAX_STEPS) problems.push(`rank ${rank} never ended: a hang`);
      if (state === "rejected") problems.push(`rank ${rank} rejected: ${error?.message}`);
      const got = r.pool.engine.rt.results.final?.[0] ?? 0;
      if (state === "resolved" && got !== expected) {
        problems.push(`rank ${rank}: result ${String(got)}, expected ${expected} (a task counted twice or lost)`);
      }
    }
    let rerun = 0;
    for (let id = 0; id < expected; id++) {
      const n = executed.get(id) ?? 0;
      if (n === 0) problems.push(`task ${id} never ran`);
      if (n > 1) rerun += n - 1;
    }
    const { killed, killedAfter } = this;
    const overtakes = this.network.overtakes;
    return { problems: problems.slice(0, 5), steps, killed, killedAfter, redealt, toRootAtOnce, rerun, overtakes };
  }
}

/** The children task `task` puts: FAN per task below `tasks` (spread: below `per`, in its own tree). */
function childrenOf(task: Task, p: SurvivingParams, per: number): Task[] {
  const { workload, tasks, size } = p;
  const out: Task[] = [];
  if (workload === "flat") return out;
  if (workload === "spread") {
    const base = task.b ?? 0;
    const local = task.id - base;
    for (let c = local * FAN + 1; c <= local * FAN + FAN && c < per; c++) out.push({ id: base + c, b: base });
    return out;
  }
  for (let c = task.id * FAN + 1; c <= task.id * FAN + FAN && c < tasks; c++) {
    if (workload === "pinned" && c % 3 === 0) out.push({ id: c, to: c % size });
    else out.push({ id: c });
  }
  return out;
}

/** The tasks rank `rank` starts with. */
function initialOf(rank: number, { workload, size, tasks }: SurvivingParams, per: number): Task[] {
  if (workload === "flat") return rank === size - 1 ? Array.from({ length: tasks }, (_, id) => ({ id })) : [];
  if (workload === "spread") return per > 0 ? [{ id: rank * per, b: rank * per }] : [];
  return rank === 0 ? [{ id: 0 }] : [];
}

function optionsOf(task: Task, workload: SurvivingWorkload): PutOptions | undefined {
  if (workload === "keyed") {
    const key = task.id % 4 === 0 ? undefined : task.id % 5;
    return { ...(key === undefined ? {} : { key }), priority: task.id % 6 === 0 ? 1 : 0 };
  }
  return task.to !== undefined ? { to: task.to } : undefined;
}
