// Rank program for `npm run bench -- pool`. Rank 0 prints one JSON line per measurement.
//   pool-ranks.ts throughput <tasks>              no-op tasks put on the coordinator up front
//   pool-ranks.ts emulate <secondsPerWorker> <slowFraction> <seed>
//       Emulated work: every task waits (setTimeout) a time drawn from a Pareto distribution (alpha 3,
//       mean 20 ms). A `slowFraction` of the workers is slowed 4x. The lower bound is computed from the
//       waits actually measured (timer overshoot counts as work), in units of a normal-speed worker.
import { emulatedWorker, putEmulatedWork } from "./emulated.ts";
import { connect } from "workpool";

const [mode = "throughput", ...rest] = process.argv.slice(2);
const world = await connect();
// Centralized unless the launcher says otherwise (the default pool is distributed); one task at a time per
// rank: a timed wait stands for a CPU-bound task, which a rank runs alone.
const pool = world.pool<number>(
  process.env.WORKPOOL_POOL ? { concurrency: 1 } : { mode: "centralized", concurrency: 1 },
);
const workers = world.size > 1 ? world.size - 1 : 1;

if (mode === "throughput") {
  const n = Number(rest[0] ?? 1_000_000);
  if (world.rank === 0) for (let i = 0; i < n; i++) pool.put(i);
  await world.barrier();
  const t0 = performance.now();
  const stats = await pool.run(() => {});
  const seconds = (performance.now() - t0) / 1000;
  const executed = await world.allreduce(stats.tasksExecuted, "sum");
  const messages = await world.allreduce(stats.messagesSent, "sum");
  if (world.rank === 0)
    console.log(JSON.stringify({ kind: "throughput", tasks: executed, seconds, messages, rate: executed / seconds }));
} else {
  const perWorker = Number(rest[0] ?? 3);
  const slowFraction = Number(rest[1] ?? 0);
  const seed = Number(rest[2] ?? 1);
  const slowCount = Math.round(workers * slowFraction);
  // The slowed workers are the last ranks (coordinator is rank 0).
  const slow = world.rank > 0 && world.rank >= world.size - slowCount ? 4 : 1;
  if (world.rank === 0) putEmulatedWork((ms) => pool.put(ms), perWorker * 1000 * workers, seed);
  const { handler, measured } = emulatedWorker(slow);
  await world.barrier();
  const t0 = performance.now();
  const stats = await pool.run(handler);
  const makespan = performance.now() - t0;
  const totalWork = await world.allreduce(measured.work, "sum");
  const maxTask = await world.allreduce(measured.longest, "max");
  const speed = await world.allreduce(world.rank === 0 && world.size > 1 ? 0 : 1 / slow, "sum");
  const deferrals = await world.allreduce(stats.counters.ecdDeferrals ?? 0, "sum");
  const tasks = await world.allreduce(stats.tasksExecuted, "sum");
  if (world.rank === 0) {
    const bound = Math.max(totalWork / speed, maxTask);
    console.log(
      JSON.stringify({
        kind: "emulate",
        ranks: world.size,
        slowCount,
        tasks,
        makespan,
        bound,
        ratio: makespan / bound,
        maxTask,
        deferrals,
      }),
    );
  }
}
await world.close();
