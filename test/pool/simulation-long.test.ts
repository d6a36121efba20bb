/**
 * The receiver-initiated balancer's long-task paths under adversarial schedules (test/helpers/simulation.ts,
 * surviving-sim.ts): the simulations' tasks take no time, so the executor is made to say that every rank's tasks
 * are long (40 ms on average). Then asks are held between tasks, hungry askers get single tasks unasked, ranks
 * ask the rank that last gave them work first, and a rank asked before its first task deals its few tasks
 * standing by (`standBy`), running a task of its own while every rank it dealt to runs one of a higher priority
 * (`ownTurn`, with the flat workload's tasks put with priorities): every result must still be exact, and no run
 * may hang or end early, with and without deaths. (This file's worker alone sees the patched executor.)
 */
import test from "ava";
import { Executor } from "../../lib/pool/executor.ts";
import { simulate, type SimParams, WORKLOADS, replayHint } from "../helpers/simulation.ts";
import { simulateSurviving, SURVIVING_WORKLOADS, survivingReplayHint } from "../helpers/surviving-sim.ts";

const exec = Executor.prototype as unknown as { longTasks: () => boolean; meanTaskMs: () => number };
exec.longTasks = () => true;
exec.meanTaskMs = () => 40;

const SEEDS = Number(process.env.WORKPOOL_SIM_SEEDS ?? 60);
const PARTNERS = ["random", "ring", "neighbours", "round-robin"] as const;

test("long tasks, simulated schedules: every workload correct under receiver-initiated balancing", async (t) => {
  const failures: string[] = [];
  const totals: Record<string, number> = {};
  for (let seed = 1; seed <= SEEDS; seed++) {
    const size = 2 + (seed % 7);
    for (const workload of WORKLOADS) {
      // Every other seed: few tasks a rank, so that ranks open with offers and deal.
      const tasks =
        workload === "pingpong"
          ? 9 + (seed % 8)
          : seed % 2 === 0
            ? size * (1 + (seed % 4)) + (seed % 3)
            : 40 + ((seed * 37) % 160);
      for (const termination of ["token-ring", "tree"] as const) {
        const p: SimParams = {
          size,
          initiation: "receiver",
          partner: PARTNERS[seed % PARTNERS.length],
          termination,
          workload,
          tasks,
          seed,
          lowWater: seed % 3,
          priorities: seed % 4 === 0,
        };
        const out = await simulate(p);
        for (const [k, v] of Object.entries(out.counters)) totals[k] = (totals[k] ?? 0) + v;
        if (out.problems.length > 0) failures.push(`${out.problems.join("; ")}\n  ${replayHint(p)}`);
      }
    }
  }
  t.deepEqual(failures, []);
  t.true((totals.standBys ?? 0) > 0, "no rank ever stood by to deal its tasks");
  t.true((totals.dealerOwnTasks ?? 0) > 0, "no dealer ever ran a task on its own turn");
  t.true((totals.asksHeld ?? 0) > 0, "no ask was ever held");
  t.true((totals.givesSent ?? 0) > 0, "no task was ever given unasked");
  t.true((totals.secondAsks ?? 0) > 0, "no rank ever asked a second partner while its first request was out");
});

test("long tasks, simulated schedules with deaths: every result exact", async (t) => {
  const failures: string[] = [];
  for (let seed = 1; seed <= SEEDS; seed++) {
    const size = 3 + (seed % 5);
    for (const workload of SURVIVING_WORKLOADS) {
      const p = {
        size,
        initiation: "receiver" as const,
        termination: seed % 3 === 0 ? ("tree" as const) : ("token-ring" as const),
        workload,
        tasks: seed % 2 === 0 ? size * (1 + (seed % 4)) + (seed % 3) : 150 + seed,
        kills: 1 + (seed % 2),
        seed,
        commitMs: seed % 3 === 0 ? 0 : 1e9,
        fifo: seed % 4 === 0,
      };
      const out = await simulateSurviving(p);
      if (out.problems.length > 0) failures.push(`${out.problems.join("; ")}\n  ${survivingReplayHint(p)}`);
    }
  }
  t.deepEqual(failures, []);
});
