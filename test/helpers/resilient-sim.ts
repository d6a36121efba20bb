/**
 * An in-process simulation of a centralized pool that survives worker deaths (option `retries`): the real
 * ResilientCoordinator and ResilientWorkers in one thread, joined by simulated channels that a seeded
 * adversarial scheduler drives. At every step it picks, from the seed, one of: deliver any message in flight
 * (any channel, any position: messages overtake each other), let the workers' run loops take a turn of the
 * event loop, kill a worker (from then on nothing it sends leaves it; what it sent before may still arrive),
 * or tell the others of a death (after which what the dead rank sent is dropped, as the messaging layer does).
 * The clock is virtual (each read advances it a little), so slices, commit times and measured rates are the
 * same on every replay of a seed.
 *
 * Workloads (each task returns 1, so a correct run's result is the number of tasks):
 * - tree: one root, FAN children per task below `tasks`;
 * - flat: `tasks` independent tasks put on the coordinator;
 * - poison: a tree in which task `tasks/2` kills whichever worker runs it: the run must fail naming it.
 * With `speculate`, worker 1 is a straggler (each of its tasks ends only when the scheduler picks it), and the
 * coordinator's straggler timer fires when the scheduler picks it: copies race their originals, and the result
 * must still count each task once. Knobs from a review that broke earlier versions: `chunk`, `priorities`,
 * `allAsync`, `appPuts` (the app's own puts during the run, which must count once too).
 *
 * The ranks, their channels and timers are the simulation kernel's (sim/); the workers' run loops are the
 * engines' own (real promises, a turn of the event loop at a time).
 */
import { ResilientCoordinator } from "../../lib/pool/centralized/resilient-coordinator.ts";
import { ResilientWorker } from "../../lib/pool/centralized/resilient-worker.ts";
import { RESILIENT, WorkingCoordinator } from "../../lib/pool/centralized/working.ts";
import { RankFailedError } from "../../lib/errors.ts";
import { type PoolConfig, resolvePoolConfig } from "../../lib/pool/options.ts";
import { seededRandom } from "../../lib/pool/partner/random.ts";
import type { Engine, PoolRuntime } from "../../lib/pool/runtime.ts";
import type { Timers } from "../../lib/pool/timers.ts";
import type { TaskContext } from "../../lib/pool/types.ts";
import { Network } from "../../sim/network.ts";
import { simContext, simRuntime, Settlement } from "../../sim/ranks.ts";
import { HeldTimers } from "../../sim/timers.ts";

export type ResilientWorkload = "tree" | "flat" | "poison";

export interface ResilientParams {
  readonly size: number;
  readonly workload: ResilientWorkload;
  readonly tasks: number;
  /** Workers killed at random points (the poison workload kills by itself). */
  readonly kills: number;
  readonly retries: number;
  readonly seed: number;
  readonly keep?: number;
  readonly coordinatorWorks?: boolean;
  /** Option `speculate`, with worker 1 a straggler: its tasks end only when the scheduler lets one end. */
  readonly speculate?: boolean;
  /** Option `chunk`. */
  readonly chunk?: number;
  /** Children get priorities -1, 0 or 1 at random. */
  readonly priorities?: boolean;
  /** Every task is async, ending when the scheduler lets it. */
  readonly allAsync?: boolean;
  /** The app puts this many tasks of its own during the run, on rank 0 or on the ranks in `spared`. */
  readonly appPuts?: number;
  /** Workers never killed (and so the ones the app puts on). */
  readonly spared?: readonly number[];
}

export interface ResilientOutcome {
  readonly problems: string[];
  readonly steps: number;
  readonly killed: number[];
  readonly overtakes: number;
  /** Tasks re-dealt after deaths, and handler runs beyond one per task (work done again). */
  readonly redealt: number;
  readonly rerun: number;
  /** Copies dealt of a straggler's tasks, and copies that lost (`speculate`). */
  readonly speculated: number;
  readonly rescinded: number;
}

const MAX_STEPS = 400_000;
const FAN = 3;

interface Task {
  readonly id: number;
}

export function resilientReplayHint(p: ResilientParams): string {
  return `replay: simulateResilient(${JSON.stringify(p)}) (test/helpers/resilient-sim.ts)`;
}

export async function simulateResilient(p: ResilientParams): Promise<ResilientOutcome> {
  const rnd = seededRandom(p.seed * 104729 + 7);
  const realNow = performance.now.bind(performance);
  let clock = 0;
  performance.now = () => (clock += 0.013);
  try {
    return await run(p, rnd);
  } finally {
    performance.now = realNow;
  }
}

async function run(p: ResilientParams, rnd: () => number): Promise<ResilientOutcome> {
  const sim = new ResilientRun(p, rnd);
  let steps = 0;
  for (; steps < MAX_STEPS; steps++) {
    const step = sim.step();
    if (step === "end") break;
    // The workers' run loops take a turn of the event loop.
    if (step === "turn") await new Promise((resolve) => setImmediate(resolve));
  }
  await new Promise((resolve) => setImmediate(resolve));
  return sim.outcome(steps);
}

/** One schedule: the coordinator and workers on the kernel's channels, the deaths, and what the tasks did. */
class ResilientRun {
  private readonly network: Network;
  private readonly held = new HeldTimers();
  private readonly engines: Engine<Task>[] = [];
  private readonly runtimes: PoolRuntime[] = [];
  private readonly settled: Settlement[] = [];
  private readonly problems: string[] = [];
  private readonly deliverWeight: number;
  private readonly dead = new Set<number>();
  /** Dead ranks the others have not been told of yet. */
  private readonly untold: number[] = [];
  /** Handler runs of each task, by id, and in all. */
  private readonly runs = new Map<number, number>();
  private handlerRuns = 0;
  /** The straggler's tasks waiting to end (and every task, with `allAsync`). */
  private readonly slowEnds: (() => void)[] = [];
  /** Kill points: a worker (never the coordinator, rank 0) dies once this many handler runs have happened. */
  private readonly killAt = new Map<number, number>();
  private redealt = 0;
  /** The app's puts during the run: still to put, and put. */
  private appLeft: number;
  private appPut = 0;

  constructor(
    private readonly p: ResilientParams,
    private readonly rnd: () => number,
  ) {
    const { size, tasks } = p;
    const config = resolvePoolConfig(
      {
        mode: "centralized",
        retries: p.retries,
        ...(p.keep !== undefined ? { keep: p.keep } : {}),
        ...(p.coordinatorWorks ? { coordinatorWorks: true } : {}),
        ...(p.speculate ? { speculate: true } : {}),
        ...(p.chunk ? { chunk: p.chunk } : {}),
      },
      undefined,
      size,
    );
    this.deliverWeight = 0.2 + rnd() * 0.6;
    this.network = new Network(size);
    const victims = Array.from({ length: size - 1 }, (_, i) => i + 1).filter((r) => !p.spared?.includes(r));
    for (let k = 0; k < p.kills && victims.length > 0; k++) {
      const rank = victims.splice(Math.floor(rnd() * victims.length), 1)[0] as number;
      this.killAt.set(rank, Math.floor(rnd() * tasks));
    }
    this.appLeft = p.appPuts ?? 0;
    // Only the coordinator sets timers; deferred callbacks run on the real event loop, as the workers' loops do.
    const timers = this.held.for(0, (fn) => setImmediate(fn));
    for (let rank = 0; rank < size; rank++) {
      const engine = this.rank(rank, config, timers);
      this.engines.push(engine);
      this.settled.push(new Settlement(engine.done));
    }
    for (const e of this.engines) e.start();
  }

  private rank(rank: number, config: PoolConfig, timers: Timers): Engine<Task> {
    const { p, rnd, runs, killAt, slowEnds } = this;
    const { tasks } = p;
    const poisonId = Math.floor(tasks / 2);
    // A dead rank's sends go nowhere.
    const rt = simRuntime(
      this.network.link(rank, () => !this.dead.has(rank)),
      config,
    );
    this.runtimes.push(rt);
    const ctx = simContext<Task>(
      rank,
      (task, o) => engine.put(task, o?.priority ?? 0, undefined, true),
      () => {},
    );
    const handler = (task: Task, c: TaskContext<Task>): number | Promise<number> => {
      runs.set(task.id, (runs.get(task.id) ?? 0) + 1);
      this.handlerRuns++;
      for (const [victim, at] of killAt) {
        if (this.handlerRuns >= at) {
          killAt.delete(victim);
          this.kill(victim);
        }
      }
      if (p.workload === "poison" && task.id === poisonId && rank !== 0) this.kill(rank);
      if (p.workload !== "flat") {
        for (let k = task.id * FAN + 1; k <= task.id * FAN + FAN && k < tasks; k++) {
          c.put({ id: k }, p.priorities ? { priority: Math.floor(rnd() * 3) - 1 } : undefined);
        }
      }
      if ((p.speculate && rank === 1) || p.allAsync) {
        return new Promise<number>((resolve) => slowEnds.push(() => resolve(1)));
      }
      return 1;
    };
    const initial =
      rank !== 0
        ? []
        : p.workload === "flat"
          ? Array.from({ length: tasks }, (_, id) => ({ task: { id }, priority: 0, to: undefined }))
          : [{ task: { id: 0 }, priority: 0, to: undefined }];
    const engine: Engine<Task> =
      rank === 0
        ? p.coordinatorWorks
          ? new WorkingCoordinator<Task>(
              { ...RESILIENT, coordinator: (crt, init) => new ResilientCoordinator(crt, init, timers) },
              rt,
              handler,
              ctx,
              initial,
            )
          : new ResilientCoordinator<Task>(rt, initial, timers)
        : new ResilientWorker<Task>(rt, handler, ctx, initial);
    return engine;
  }

  private kill(rank: number): void {
    if (this.dead.has(rank)) return;
    this.dead.add(rank);
    this.untold.push(rank);
  }

  private outcomeOf(rank: number) {
    return (this.settled[rank] as Settlement).state;
  }

  private live(): number[] {
    return this.engines.map((_, r) => r).filter((r) => !this.dead.has(r));
  }

  /**
   * One step of the schedule the seed picks: "end" when every live rank has ended and every death was told,
   * "turn" when the workers' loops are to take a turn of the event loop.
   */
  step(): "end" | "next" | "turn" {
    const { p, rnd, network, held, engines, untold, slowEnds } = this;
    if (this.live().every((r) => this.outcomeOf(r) !== "pending") && untold.length === 0) return "end";
    const pick = rnd();
    if (this.appLeft > 0 && pick > 0.985 && pick <= 0.99) {
      // Not on a rank whose run has ended (its put would wait for the next run), nor too near the end: a put
      // racing the end of a run may miss it, in any pool.
      const appRanks = [0, ...(p.spared ?? [])];
      const r = appRanks[Math.floor(rnd() * appRanks.length)] as number;
      if (this.outcomeOf(r) === "pending" && this.handlerRuns < p.tasks / 2) {
        this.appLeft--;
        this.appPut++;
        engines[r]?.put({ id: p.tasks + this.appPut - 1 }, 0, undefined);
      }
      return "next";
    }
    if (slowEnds.length > 0 && (pick > 0.97 || (p.allAsync && pick > 0.6))) {
      (slowEnds.shift() as () => void)();
    } else if (held.timers.size > 0 && pick > 0.95) {
      held.take(held.timers.keys().next().value as number).fn();
    } else if (untold.length > 0 && pick < 0.02) {
      // The death notice reaches every live rank; what the dead sent and has not arrived is dropped.
      const rank = untold.shift() as number;
      network.dropFrom(rank);
      for (const r of this.live()) {
        const n = engines[r]?.onPeerDead?.(rank, new RankFailedError(rank, `rank ${rank} died (simulated)`));
        if (n !== undefined) this.redealt += n;
      }
    } else if (network.inFlight.length > 0 && pick < this.deliverWeight) {
      const m = network.take(Math.floor(rnd() * network.inFlight.length));
      if (this.dead.has(m.dest)) return "next";
      network.arrived(m);
      engines[m.dest]?.onMessage(m.source, m.tag, m.body);
    } else return "turn";
    return "next";
  }

  /** What a correct run ends with: every live rank resolved with the exact count (or all failed, poison). */
  outcome(steps: number): ResilientOutcome {
    const { p, problems, runs } = this;
    if (steps >= MAX_STEPS) problems.push(`no end after ${MAX_STEPS} steps (a hang?)`);
    const want = p.tasks + this.appPut;
    const errorOf = (rank: number) => this.settled[rank]?.error;
    if (p.workload === "poison") {
      const coordinatorError = errorOf(0);
      if (this.outcomeOf(0) !== "rejected" || !/kills its worker/.test(String(coordinatorError?.message))) {
        problems.push(
          `the coordinator did not fail the run on the poison task: ${this.outcomeOf(0)} ${coordinatorError?.message}`,
        );
      }
      for (const r of this.live())
        if (this.outcomeOf(r) !== "rejected") problems.push(`rank ${r}: ${this.outcomeOf(r)}, not rejected`);
    } else {
      for (const r of this.live()) {
        if (this.outcomeOf(r) !== "resolved") {
          problems.push(`rank ${r}: ${this.outcomeOf(r)}${errorOf(r) ? ` (${errorOf(r)?.message})` : ""}`);
          continue;
        }
        const got = (this.runtimes[r]?.results.final?.[0] as number | undefined) ?? 0;
        if (got !== want) problems.push(`rank ${r}: result ${got}, expected ${want} (a task counted twice or lost)`);
      }
      for (let id = 0; id < want; id++) if (!runs.has(id)) problems.push(`task ${id} never ran`);
    }
    let rerun = 0;
    for (const n of runs.values()) rerun += n - 1;
    const counters = this.runtimes[0]?.stats.counters ?? {};
    return {
      problems: problems.slice(0, 5),
      steps,
      killed: [...this.dead],
      overtakes: this.network.overtakes,
      redealt: this.redealt,
      rerun,
      speculated: counters.speculated ?? 0,
      rescinded: counters.rescinded ?? 0,
    };
  }
}
