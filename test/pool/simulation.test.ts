/**
 * Termination and balancing under adversarial, seeded schedules, in process (test/helpers/simulation.ts):
 * every combination of initiation, partner and detector (config.ts), on every workload, on 2 to 7 ranks, over
 * every topology, several thousand schedules per run of this file (25 seeds x 8 workloads x 22 combinations).
 * A failing schedule prints the line that replays it. The run also checks that the races these protocols
 * exist for did happen (messages overtaking others on a channel, token-ring blackenings, tree joins, refusals
 * and notifications, diffusions, ripples, lifeline deals), and that the simulation catches a detector with a
 * known bug: a test that cannot fail proves nothing.
 *
 * WORKPOOL_SIM_SEEDS=N runs N seeds per combination and workload instead of the default.
 */
import test from "ava";
import { comboName, DISTRIBUTED_COMBINATIONS, readsTopology, TOPOLOGIES } from "../../lib/pool/config.ts";
import { TokenRing } from "../../lib/pool/termination/token-ring.ts";
import { replayHint, type SimOutcome, type SimParams, simulate, WORKLOADS } from "../helpers/simulation.ts";

const SEEDS = Number(process.env.WORKPOOL_SIM_SEEDS ?? 25);

function paramsFor(
  c: (typeof DISTRIBUTED_COMBINATIONS)[number],
  workload: SimParams["workload"],
  seed: number,
): SimParams {
  const size = 2 + (seed % 6);
  return {
    size,
    ...c,
    workload,
    // Flat: one seed in three puts few tasks (1 to 4 a rank), so that receiver-initiated ranks open with offers.
    tasks:
      workload === "pingpong"
        ? 9 + (seed % 8)
        : workload === "flat" && seed % 3 === 0
          ? size * (1 + (seed % 4))
          : 40 + ((seed * 37) % 160),
    seed,
    // Diffusion and the neighbours partner run over every topology in turn.
    topology: readsTopology(c) ? TOPOLOGIES[seed % TOPOLOGIES.length] : undefined,
    // Sender-initiated offers above highWater and takes at or below it: marks of 1 to 4.
    highWater: c.initiation === "sender" ? 1 + (seed % 4) : undefined,
    lowWater: c.initiation === "receiver" || c.initiation === "lifeline" ? seed % 3 : undefined,
  };
}

for (const c of DISTRIBUTED_COMBINATIONS) {
  const name = comboName(c);
  test(`simulated schedules: ${name} runs every workload correctly`, async (t) => {
    const failures: string[] = [];
    const totals: Record<string, number> = {};
    let overtakes = 0;
    let runs = 0;
    for (const workload of WORKLOADS) {
      for (let seed = 1; seed <= SEEDS; seed++) {
        const p = paramsFor(c, workload, seed);
        const out: SimOutcome = await simulate(p);
        runs++;
        overtakes += out.overtakes;
        for (const [k, v] of Object.entries(out.counters)) totals[k] = (totals[k] ?? 0) + v;
        if (out.problems.length > 0) failures.push(`${out.problems.join("; ")}\n  ${replayHint(p)}`);
      }
    }
    t.deepEqual(failures, [], `${failures.length} of ${runs} schedules failed`);
    // The schedules did reorder and did move work (else the runs above prove little).
    t.true(overtakes > 0, "no message ever overtook another");
    t.true((totals.tasksMovedIn ?? 0) > 0, "no task ever moved");
    if (c.termination === "token-ring") t.true((totals.blackenings ?? 0) > 0, "no token-ring blackening happened");
    if (c.termination === "tree") t.true((totals.treeJoins ?? 0) > 0, "no rank ever re-joined the tree");
    if (c.initiation === "receiver") {
      t.true((totals.requestsRefused ?? 0) > 0, "no request was ever refused");
      // Between two tasks a hungry asker gets its share at once (GIVE); NOTIFY is for a rank with async tasks in
      // flight, which no schedule here has (test/pool/concurrency.test.ts).
      if (c.partner !== "ring") t.true((totals.hungryGives ?? 0) > 0, "no hungry asker was ever given its share");
      t.true((totals.rootOpenings ?? 0) > 0, "no root's rank ever offered the root's children");
      t.true((totals.openingOffers ?? 0) > 0, "no rank ever opened a run with offers");
      t.true((totals.openingHaves ?? 0) > 0, "no offer was ever answered HAVE");
      t.true((totals.givesSent ?? 0) > 0, "no offer was ever taken up (WANT, GIVE)");
      // Dealing few tasks before the first (`standBy`) and holding asks between two long tasks need tasks that
      // may be long, which the schedules here seldom have: simulation-long.test.ts makes every task long and
      // checks both.
    }
    if (c.initiation === "sender") {
      t.true((totals.offersAccepted ?? 0) > 0, "no offer was ever accepted");
      t.true((totals.busyReceived ?? 0) > 0, "no offer was ever answered busy");
      t.true((totals.releasesSent ?? 0) > 0, "no accepted offer was ever released (nothing left to push)");
    }
    if (c.initiation === "diffusion") t.true((totals.diffusedIn ?? 0) > 0, "no task ever diffused");
    if (c.initiation === "ripple") t.true((totals.rippledIn ?? 0) > 0, "no task ever rippled");
    if (c.initiation === "lifeline") {
      t.true((totals.lifelinesSent ?? 0) > 0, "no rank ever fell back on its lifelines");
      t.true((totals.dealsSent ?? 0) > 0, "no lifeline ever dealt work");
      t.true((totals.stealsAnswered ?? 0) > 0, "no random steal ever succeeded");
    }
  });
}

test("simulated schedules replay exactly from their seed", async (t) => {
  const p: SimParams = {
    size: 5,
    initiation: "receiver",
    partner: "random",
    termination: "token-ring",
    workload: "pinned",
    tasks: 150,
    seed: 42,
  };
  const a = await simulate(p);
  const b = await simulate(p);
  t.deepEqual(a.problems, []);
  t.is(a.steps, b.steps);
  t.deepEqual(a.counters, b.counters);
  t.is(a.overtakes, b.overtakes);
});

// The simulation must catch a broken detector: a token ring that never turns black (Safra's rule dropped)
// declares termination while a task message that crossed the token backwards is still in flight.
test.serial("the simulation catches a token ring without its colouring rule", async (t) => {
  const proto = TokenRing.prototype as unknown as { received: (source: number, stamp: number) => void };
  const original = proto.received;
  proto.received = function (this: { count: number }) {
    this.count--;
  };
  let caught: string | undefined;
  try {
    for (let seed = 1; seed <= 400 && caught === undefined; seed++) {
      for (const workload of ["pingpong", "pinned", "tree"] as const) {
        const out = await simulate({
          size: 2 + (seed % 4),
          initiation: "receiver",
          partner: "round-robin",
          termination: "token-ring",
          workload,
          tasks: workload === "pingpong" ? 13 : 120,
          seed,
        });
        if (out.problems.length > 0) {
          caught = `seed ${seed}, ${workload}: ${out.problems[0]}`;
          break;
        }
      }
    }
  } finally {
    proto.received = original;
  }
  t.truthy(caught, "a token ring without blackening passed every schedule");
  t.log(`caught: ${caught}`);
});

// Beyond FLAT_DONE_RANKS (64) the root's DONE travels down a spanning tree, each rank passing it on: every
// rank must still end, with the run's result, in any delivery order; and a stopped or failed run still ends.
test("simulated schedules: at 70 ranks DONE passed down the tree reaches every rank", async (t) => {
  const failures: string[] = [];
  const combos = [
    { initiation: "sender", partner: "random", termination: "tree" },
    { initiation: "receiver", partner: "random", termination: "token-ring" },
    { initiation: "lifeline", termination: "tree" },
  ] as const;
  for (const c of combos) {
    for (const workload of ["tree", "flat", "stop"] as const) {
      for (let seed = 1; seed <= 3; seed++) {
        const p: SimParams = { size: 70, ...c, workload, tasks: 400, seed };
        const out = await simulate(p);
        if (out.problems.length > 0) failures.push(`${out.problems.join("; ")}\n  ${replayHint(p)}`);
      }
    }
  }
  t.deepEqual(failures, []);
});
