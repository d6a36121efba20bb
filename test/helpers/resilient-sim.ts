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
import { resolvePoolConfig } from "../../lib/pool/options.ts";
import { seededRandom } from "../../lib/pool/partner/random.ts";
import type { Engine, PoolRuntime } from "../../lib/pool/runtime.ts";
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
  const deliverWeight = 0.2 + rnd() * 0.6;
  const network = new Network(size);
  const inFlight = network.inFlight;
  const problems: string[] = [];
  const dead = new Set<number>();
  /** Dead ranks the others have not been told of yet. */
  const untold: number[] = [];
  const runs = new Map<number, number>();
  /** The straggler's tasks waiting to end, and the coordinator's pending timers. */
  const slowEnds: (() => void)[] = [];
  const held = new HeldTimers();
  const timerFns = held.timers;
  // Only the coordinator sets timers; deferred callbacks run on the real event loop, as the workers' loops do.
  const timers = held.for(0, (fn) => setImmediate(fn));
  let redealt = 0;
  const poisonId = Math.floor(tasks / 2);
  // Kill points: a worker (never the coordinator, rank 0) dies once this many handler runs have happened.
  const killAt = new Map<number, number>();
  const victims = Array.from({ length: size - 1 }, (_, i) => i + 1).filter((r) => !p.spared?.includes(r));
  for (let k = 0; k < p.kills && victims.length > 0; k++) {
    const rank = victims.splice(Math.floor(rnd() * victims.length), 1)[0] as number;
    killAt.set(rank, Math.floor(rnd() * tasks));
  }
  let handlerRuns = 0;

  const engines: Engine<Task>[] = [];
  const runtimes: PoolRuntime[] = [];
  const settled: Settlement[] = [];
  const kill = (rank: number) => {
    if (dead.has(rank)) return;
    dead.add(rank);
    untold.push(rank);
  };

  for (let rank = 0; rank < size; rank++) {
    // A dead rank's sends go nowhere.
    const rt = simRuntime(
      network.link(rank, () => !dead.has(rank)),
      config,
    );
    runtimes.push(rt);
    const ctx = simContext<Task>(
      rank,
      (task, o) => engine.put(task, o?.priority ?? 0, undefined, true),
      () => {},
    );
    const handler = (task: Task, c: TaskContext<Task>): number | Promise<number> => {
      runs.set(task.id, (runs.get(task.id) ?? 0) + 1);
      handlerRuns++;
      for (const [victim, at] of killAt) {
        if (handlerRuns >= at) {
          killAt.delete(victim);
          kill(victim);
        }
      }
      if (p.workload === "poison" && task.id === poisonId && rank !== 0) kill(rank);
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
    engines.push(engine);
    settled.push(new Settlement(engine.done));
  }
  const outcome = (rank: number) => (settled[rank] as Settlement).state;
  const errorOf = (rank: number) => settled[rank]?.error;
  for (const e of engines) e.start();

  const live = () => engines.map((_, r) => r).filter((r) => !dead.has(r));
  let appLeft = p.appPuts ?? 0;
  let appPut = 0;
  const appRanks = [0, ...(p.spared ?? [])];
  let steps = 0;
  for (; steps < MAX_STEPS; steps++) {
    if (live().every((r) => outcome(r) !== "pending") && untold.length === 0) break;
    const pick = rnd();
    if (appLeft > 0 && pick > 0.985 && pick <= 0.99) {
      // Not on a rank whose run has ended (its put would wait for the next run), nor too near the end: a put
      // racing the end of a run may miss it, in any pool.
      const r = appRanks[Math.floor(rnd() * appRanks.length)] as number;
      if (outcome(r) === "pending" && handlerRuns < tasks / 2) {
        appLeft--;
        appPut++;
        engines[r]?.put({ id: tasks + appPut - 1 }, 0, undefined);
      }
      continue;
    }
    if (slowEnds.length > 0 && (pick > 0.97 || (p.allAsync && pick > 0.6))) {
      (slowEnds.shift() as () => void)();
    } else if (timerFns.size > 0 && pick > 0.95) {
      held.take(timerFns.keys().next().value as number).fn();
    } else if (untold.length > 0 && pick < 0.02) {
      // The death notice reaches every live rank; what the dead sent and has not arrived is dropped.
      const rank = untold.shift() as number;
      network.dropFrom(rank);
      for (const r of live()) {
        const n = engines[r]?.onPeerDead?.(rank, new RankFailedError(rank, `rank ${rank} died (simulated)`));
        if (n !== undefined) redealt += n;
      }
    } else if (inFlight.length > 0 && pick < deliverWeight) {
      const m = network.take(Math.floor(rnd() * inFlight.length));
      if (dead.has(m.dest)) continue;
      network.arrived(m);
      engines[m.dest]?.onMessage(m.source, m.tag, m.body);
    } else {
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  await new Promise((resolve) => setImmediate(resolve));

  if (steps >= MAX_STEPS) problems.push(`no end after ${MAX_STEPS} steps (a hang?)`);
  const want = tasks + appPut;
  if (p.workload === "poison") {
    const coordinatorError = errorOf(0);
    if (outcome(0) !== "rejected" || !/kills its worker/.test(String(coordinatorError?.message))) {
      problems.push(
        `the coordinator did not fail the run on the poison task: ${outcome(0)} ${coordinatorError?.message}`,
      );
    }
    for (const r of live()) if (outcome(r) !== "rejected") problems.push(`rank ${r}: ${outcome(r)}, not rejected`);
  } else {
    for (const r of live()) {
      if (outcome(r) !== "resolved") {
        problems.push(`rank ${r}: ${outcome(r)}${errorOf(r) ? ` (${errorOf(r)?.message})` : ""}`);
        continue;
      }
      const got = (runtimes[r]?.results.final?.[0] as number | undefined) ?? 0;
      if (got !== want) problems.push(`rank ${r}: result ${got}, expected ${want} (a task counted twice or lost)`);
    }
    for (let id = 0; id < want; id++) if (!runs.has(id)) problems.push(`task ${id} never ran`);
  }
  let rerun = 0;
  for (const n of runs.values()) rerun += n - 1;
  const counters = runtimes[0]?.stats.counters ?? {};
  return {
    problems: problems.slice(0, 5),
    steps,
    killed: [...dead],
    overtakes: network.overtakes,
    redealt,
    rerun,
    speculated: counters.speculated ?? 0,
    rescinded: counters.rescinded ?? 0,
  };
}
