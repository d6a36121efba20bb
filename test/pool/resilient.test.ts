/**
 * The centralized pool that survives worker deaths (option `retries`), in process, under seeded adversarial
 * schedules (test/helpers/resilient-sim.ts): messages overtake each other, workers die at random points of the
 * run (what they sent before may still arrive, until the others are told), and the result must be exact every
 * time: each task's value counted once, none lost. A task that kills every worker that runs it must fail the
 * run naming it. A failing schedule prints the line that replays it. And the simulation must catch a
 * coordinator that forgets a dead worker's ledger: a test that cannot fail proves nothing.
 *
 * WORKPOOL_SIM_SEEDS=N runs N seeds per workload instead of the default. The tests run one at a time: each
 * replaces the process's clock with its schedule's while it runs.
 */
import test from "ava";
import { ResilientCoordinator } from "../../lib/pool/centralized/resilient-coordinator.ts";
import {
  type ResilientParams,
  type ResilientWorkload,
  resilientReplayHint,
  simulateResilient,
} from "../helpers/resilient-sim.ts";

const SEEDS = Number(process.env.WORKPOOL_SIM_SEEDS ?? 30);

function paramsFor(workload: ResilientWorkload, seed: number, speculate = false): ResilientParams {
  // Poison: one death that cannot be pinned on the task, `retries` that are, and a worker left over.
  const size = workload === "poison" ? 5 + (seed % 3) : 3 + (seed % 5);
  return {
    size,
    workload,
    tasks: 200 + seed * 13,
    kills: workload === "poison" ? 0 : 1 + (seed % Math.min(3, size - 2)),
    retries: 2,
    seed,
    keep: seed % 2 ? 4 : undefined,
    coordinatorWorks: !speculate && workload !== "poison" && seed % 4 === 0,
    ...(speculate ? { speculate } : {}),
  };
}

for (const workload of ["tree", "flat", "poison"] as const) {
  test.serial(`simulated schedules with deaths: ${workload}`, async (t) => {
    const failures: string[] = [];
    let deaths = 0;
    let redealt = 0;
    let overtakes = 0;
    for (let seed = 1; seed <= SEEDS; seed++) {
      const p = paramsFor(workload, seed);
      const out = await simulateResilient(p);
      deaths += out.killed.length;
      redealt += out.redealt;
      overtakes += out.overtakes;
      if (out.problems.length > 0) failures.push(`${out.problems.join("; ")}\n  ${resilientReplayHint(p)}`);
    }
    t.deepEqual(failures, [], `${failures.length} of ${SEEDS} schedules failed`);
    // The schedules did kill workers that held work, and did reorder messages (else they prove little).
    t.true(deaths >= SEEDS, `only ${deaths} deaths in ${SEEDS} schedules`);
    t.true(redealt > 0, "no task was ever re-dealt");
    t.true(overtakes > 0, "no message ever overtook another");
  });
}

// Rescission for time: a straggler's tasks are copied to idle workers near the end, copies race their
// originals (and deaths), and each task must still count once.
for (const workload of ["tree", "flat"] as const) {
  test.serial(`simulated schedules with a straggler and speculate: ${workload}`, async (t) => {
    const failures: string[] = [];
    let speculated = 0;
    let rescinded = 0;
    for (let seed = 1; seed <= SEEDS; seed++) {
      const p = paramsFor(workload, seed, true);
      const out = await simulateResilient(p);
      speculated += out.speculated;
      rescinded += out.rescinded;
      if (out.problems.length > 0) failures.push(`${out.problems.join("; ")}\n  ${resilientReplayHint(p)}`);
    }
    t.deepEqual(failures, [], `${failures.length} of ${SEEDS} schedules failed`);
    t.true(speculated > 0, "no copy was ever dealt");
    t.true(rescinded > 0, "no copy ever lost to another");
  });
}

// What a review of the protocol broke it with, each on every seed: chunks, priorities, every task async, the
// app's own puts during the run; a working coordinator with speculate (its own worker's values and puts apart
// from the run's), with and without keep.
const VARIANTS: [name: string, extra: Partial<ResilientParams>][] = [
  ["chunk=3, speculate", { chunk: 3, speculate: true }],
  ["priorities, keep=1", { priorities: true, keep: 1 }],
  ["every task async, speculate", { allAsync: true, speculate: true }],
  ["the app's puts during the run, speculate", { appPuts: 20, spared: [1], speculate: true }],
  ["coordinatorWorks, speculate, keep=4", { coordinatorWorks: true, speculate: true, keep: 4 }],
  ["coordinatorWorks, speculate, keep=0", { coordinatorWorks: true, speculate: true, keep: 0 }],
];
for (const [name, extra] of VARIANTS) {
  test.serial(`simulated schedules with deaths, ${name}`, async (t) => {
    const failures: string[] = [];
    for (let seed = 1; seed <= SEEDS; seed++) {
      const p: ResilientParams = { ...paramsFor("tree", seed), ...extra };
      const out = await simulateResilient(p);
      if (out.problems.length > 0) failures.push(`${out.problems.join("; ")}\n  ${resilientReplayHint(p)}`);
    }
    t.deepEqual(failures, [], `${failures.length} of ${SEEDS} schedules failed`);
  });
}

test.serial("simulated schedules replay exactly from their seed", async (t) => {
  const p = paramsFor("tree", 7);
  const a = await simulateResilient(p);
  const b = await simulateResilient(p);
  t.deepEqual(a.problems, []);
  t.is(a.steps, b.steps);
  t.deepEqual(a.killed, b.killed);
  t.is(a.redealt, b.redealt);
  t.is(a.rerun, b.rerun);
});

// A coordinator that drops a dead worker's ledger instead of re-dealing it loses tasks: the simulation must
// say so.
test.serial("the simulation catches a coordinator that does not re-deal a dead worker's tasks", async (t) => {
  const proto = ResilientCoordinator.prototype as unknown as { onPeerDead: (rank: number, e: Error) => unknown };
  const original = proto.onPeerDead;
  proto.onPeerDead = function (this: { byRank: Map<number, { ledger: Map<number, unknown> }> }, rank, e) {
    this.byRank.get(rank)?.ledger.clear();
    return original.call(this, rank, e);
  };
  let caught: string | undefined;
  try {
    for (let seed = 1; seed <= 40 && caught === undefined; seed++) {
      const out = await simulateResilient(paramsFor("tree", seed));
      if (out.problems.length > 0) caught = `seed ${seed}: ${out.problems[0]}`;
    }
  } finally {
    proto.onPeerDead = original;
  }
  t.truthy(caught, "a coordinator that forgets dead workers' tasks passed every schedule");
  t.log(`caught: ${caught}`);
});
