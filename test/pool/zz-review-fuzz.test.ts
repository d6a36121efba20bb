import test from "ava";
import { Executor } from "../../lib/pool/executor.ts";
import { simulate, WORKLOADS } from "../helpers/simulation.ts";
import { simulateSurviving, SURVIVING_WORKLOADS } from "../helpers/surviving-sim.ts";

const proto = Executor.prototype as unknown as { longTasks: () => boolean; meanTaskMs: () => number };
proto.longTasks = () => true;
proto.meanTaskMs = () => 40;

test.serial("long tasks (faked), plain sim", async (t) => {
  const fails: string[] = [];
  const tot: Record<string, number> = {};
  for (let seed = 1; seed <= 300; seed++) {
    const size = 2 + (seed % 7);
    for (const workload of WORKLOADS) {
      const few = seed % 2 === 0;
      const tasks = workload === "pingpong" ? 9 + (seed % 8) : few ? size * (1 + (seed % 4)) + (seed % 3) : 40 + ((seed * 37) % 160);
      for (const termination of ["token-ring", "tree"] as const) {
        const p = { size, initiation: "receiver" as const, partner: (["random", "ring", "neighbours", "round-robin"] as const)[seed % 4], termination, workload, tasks, seed, lowWater: seed % 3 };
        const out = await simulate(p);
        for (const [k, v] of Object.entries(out.counters)) tot[k] = (tot[k] ?? 0) + v;
        if (out.problems.length) fails.push(JSON.stringify(p) + " " + out.problems.join("; "));
      }
    }
  }
  t.log(JSON.stringify({ standBys: tot.standBys, dealingEnded: tot.dealingEnded, late: tot.openingLateWants, unans: tot.openingUnanswered, held: tot.asksHeld }));
  t.deepEqual(fails.slice(0, 5), []);
});

test.serial("long tasks (faked), surviving sim", async (t) => {
  const fails: string[] = [];
  for (let seed = 1; seed <= 200; seed++) {
    const size = 3 + (seed % 5);
    for (const workload of SURVIVING_WORKLOADS) {
      const tasks = seed % 2 === 0 ? size * (1 + (seed % 4)) + (seed % 3) : 150 + seed;
      const p = { size, initiation: "receiver" as const, termination: (seed % 3 ? "token-ring" : "tree") as "tree", workload, tasks, kills: 1 + (seed % 2), seed, commitMs: seed % 3 === 0 ? 0 : 1e9, fifo: seed % 4 === 0 };
      const out = await simulateSurviving(p);
      if (out.problems.length) fails.push(JSON.stringify(p) + " " + out.problems.join("; "));
    }
  }
  t.deepEqual(fails.slice(0, 5), []);
});
