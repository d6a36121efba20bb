/**
 * The distributed pool that survives deaths (`retries`, lib/pool/distributed/resilient.ts), in process, under
 * seeded adversarial schedules (test/helpers/surviving-sim.ts): messages overtake each other, ranks other than
 * the root die at random points (what they had in flight lost or still arriving), each live rank learns of each
 * death at a moment of its own, and the result must be exact every time. The kills must land after every kind
 * of step a rank takes, and the simulation must catch a ledger that forgets a dead rank's tasks: a test that
 * cannot fail proves nothing. A failing schedule prints the line that replays it.
 *
 * WORKPOOL_SIM_SEEDS=N runs N seeds per workload and initiation instead of the default. The tests run one at a
 * time: the second replaces a method of the ledger while it runs.
 */
import test from "ava";
import { Ledger } from "../../lib/pool/distributed/ledger.ts";
import { type PoolOptions, resolvePoolConfig } from "../../lib/pool/options.ts";
import {
  type StepKind,
  simulateSurviving,
  SURVIVING_WORKLOADS,
  type SurvivingParams,
  survivingReplayHint,
} from "../helpers/surviving-sim.ts";

const SEEDS = Number(process.env.WORKPOOL_SIM_SEEDS ?? 6);

function paramsFor(
  workload: SurvivingParams["workload"],
  initiation: SurvivingParams["initiation"],
  seed: number,
): SurvivingParams {
  return {
    size: 3 + (seed % 5),
    initiation,
    termination: seed % 2 ? "token-ring" : "tree",
    workload,
    tasks: 150 + seed * 7,
    kills: 1 + (seed % 3),
    seed,
    commitMs: seed % 3 === 0 ? 0 : 1e9,
  };
}

test.serial("simulated schedules with deaths: every result exact, kills after every kind of step", async (t) => {
  const failures: string[] = [];
  const after = new Set<StepKind>();
  let deaths = 0;
  let redealt = 0;
  let overtakes = 0;
  for (const workload of SURVIVING_WORKLOADS) {
    for (const initiation of ["receiver", "lifeline"] as const) {
      for (let seed = 1; seed <= SEEDS; seed++) {
        const p = paramsFor(workload, initiation, seed);
        const out = await simulateSurviving(p);
        deaths += out.killed.length;
        redealt += out.redealt;
        overtakes += out.overtakes;
        for (const k of out.killedAfter) after.add(k);
        if (out.problems.length > 0) failures.push(`${out.problems.join("; ")}\n  ${survivingReplayHint(p)}`);
      }
    }
  }
  t.deepEqual(failures, []);
  const runs = SURVIVING_WORKLOADS.length * 2 * SEEDS;
  t.true(deaths >= runs, `only ${deaths} deaths in ${runs} schedules`);
  t.true(redealt > 0, "no task was ever re-dealt");
  t.true(overtakes > 0, "no message ever overtook another");
  for (const kind of ["task", "idle", "message", "flush", "soon"] as const) {
    t.true(after.has(kind), `no rank was killed right after a step of kind ${kind} (${[...after].join(", ")})`);
  }
});

test.serial(
  "ordered channels, as ZeroMQ's: a transfer to the root leaves with its commit; every result exact",
  async (t) => {
    const failures: string[] = [];
    let deaths = 0;
    let direct = 0;
    for (const workload of SURVIVING_WORKLOADS) {
      for (const initiation of ["receiver", "lifeline"] as const) {
        for (let seed = 1; seed <= SEEDS; seed++) {
          const p = { ...paramsFor(workload, initiation, seed), fifo: true };
          const out = await simulateSurviving(p);
          deaths += out.killed.length;
          direct += out.toRootAtOnce;
          if (out.problems.length > 0) failures.push(`${out.problems.join("; ")}\n  ${survivingReplayHint(p)}`);
        }
      }
    }
    t.deepEqual(failures, []);
    t.true(deaths >= SURVIVING_WORKLOADS.length * 2 * SEEDS, `only ${deaths} deaths`);
    t.true(direct > 0, "no transfer to the root ever left without waiting for its ACK");
  },
);

test.serial("the simulation catches a ledger that does not re-deal a dead rank's tasks", async (t) => {
  const proto = Ledger.prototype as unknown as { redeal: (...args: unknown[]) => void };
  const redeal = proto.redeal;
  proto.redeal = () => {};
  try {
    let caught = 0;
    for (let seed = 1; seed <= 10; seed++) {
      const out = await simulateSurviving(paramsFor("tree", "receiver", seed));
      if (out.problems.some((p) => /expected|never ran|hang|never ended/.test(p))) caught++;
    }
    t.true(caught > 0, "no schedule noticed the lost tasks");
  } finally {
    proto.redeal = redeal;
  }
});

test("retries in a distributed pool: initiations without one answer per request are refused, naming the option", (t) => {
  const config = (o: PoolOptions) => resolvePoolConfig(o, undefined, 4);
  t.is(config({ mode: "distributed", retries: 1, initiation: "lifeline" }).retries, 1);
  t.is(config({ retries: 1 }).mode, "centralized");
  t.throws(() => config({ mode: "distributed", retries: 1, initiation: "sender" }), {
    name: "ConfigError",
    message: /^pool option `retries` needs initiation receiver or lifeline .*got initiation `sender`$/,
  });
  t.throws(() => resolvePoolConfig(undefined, "distributed,retries=2,initiation=diffusion", 4), {
    message: /`retries` needs initiation receiver or lifeline/,
  });
});
