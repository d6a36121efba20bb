// Rank program for `npm run bench -- faults`: a centralized pool through a worker's death and beside a straggler,
// with emulated work (programs/emulated.ts: every task waits a Pareto(alpha 3, mean 20 ms) time, all put on
// rank 0). Every handler returns [measured wait, same, 1], the wait in units of a normal-speed worker (timer
// overshoot counts as work), reduced to [sum, max, sum]: the pool counts each task's value once, so `result` is
// the total task time W, the longest task and the number of tasks, each task counted once however often it ran
// (a count other than the tasks put is a wrong answer).
//
//   faults-ranks.ts death <secondsPerWorker> <seed>
//       Two runs of `centralized, retries: 1` over the same work: a reference with no death, then one where
//       worker 1 + seed % workers SIGKILLs itself at half of W / workers (its own clock from its run's start;
//       a task under way then is cut at that instant). Just before dying it prints
//       {"kind":"died","rank":R,"at":EPOCH_MS}; rank 0 prints {"kind":"noticed","rank":R,"at":EPOCH_MS} when it
//       hears of the death.
//   faults-ranks.ts stragglers <secondsPerWorker> <seed>
//       The last rank's waits are 10x longer; two runs over the same work: plain `centralized` (its
//       Expected Card Distribution near the end), then `centralized, retries: 1, speculate: true`.
//
// Rank 0 prints one JSON line per run: kind, makespan (ms, from the barrier before run to run resolving),
// startedAt (epoch ms, same instant), work, longest and count (from `result`), tasks (put), counters (rank 0's
// pool counters).
import { writeSync } from "node:fs";
import { connect, type PoolOptions } from "workpool";
import { putEmulatedWork } from "./emulated.ts";

type Sample = [work: number, longest: number, count: number];

const [scenario = "death", perWorkerArg = "3", seedArg = "1"] = process.argv.slice(2);
const perWorker = Number(perWorkerArg);
const seed = Number(seedArg);
const SLOWDOWN = 10;

const world = await connect();
const { rank, size } = world;
const workers = size - 1;
/** The work every run puts: the same seeded durations (ms, at normal speed), known on every rank. */
const durations: number[] = [];
putEmulatedWork((ms) => durations.push(ms), perWorker * 1000 * workers, seed);
const nominal = durations.reduce((a, b) => a + b, 0);

const epoch = () => performance.timeOrigin + performance.now();
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const combine = (a: Sample, b: Sample): Sample => [a[0] + b[0], Math.max(a[1], b[1]), a[2] + b[2]];

/** The emulated task: waits `ms * slowdown`, returns the wait measured in normal-speed units. */
function handler(slowdown: number, deathAt = Number.POSITIVE_INFINITY) {
  return async (ms: number): Promise<Sample> => {
    const s = performance.now();
    if (s + ms * slowdown >= deathAt) {
      await wait(deathAt - s);
      writeSync(1, `${JSON.stringify({ kind: "died", rank, at: epoch() })}\n`);
      process.kill(process.pid, "SIGKILL");
    }
    await wait(ms * slowdown);
    const unit = (performance.now() - s) / slowdown;
    return [unit, unit, 1];
  };
}

/** One run of a fresh pool over `durations`; rank 0 prints its line. */
async function measure(kind: string, options: PoolOptions, slowdown: number, deathAt?: (start: number) => number) {
  // One task at a time: a timed wait stands for a CPU-bound task, which a rank runs alone.
  const pool = world.pool<number>({ ...options, concurrency: 1 });
  if (rank === 0) for (const ms of durations) pool.put(ms);
  await world.barrier();
  const startedAt = epoch();
  const t0 = performance.now();
  const stats = await pool.run(handler(slowdown, deathAt?.(t0)), { reduce: combine });
  const makespan = performance.now() - t0;
  if (rank === 0) {
    const [work, longest, count] = stats.result ?? [0, 0, 0];
    const line = { kind, makespan, startedAt, work, longest, count, tasks: durations.length };
    console.log(JSON.stringify({ ...line, counters: stats.counters }));
  }
}

if (scenario === "death") {
  const victim = 1 + (seed % workers);
  const half = nominal / workers / 2;
  await measure("reference", { mode: "centralized", retries: 1 }, 1);
  // When the coordinator hears of the death (the launcher's notice; lib/comm/world.ts onPeerDeath).
  if (rank === 0) {
    world.onPeerDeath((dead) => console.log(JSON.stringify({ kind: "noticed", rank: dead, at: epoch() })));
  }
  await measure("death", { mode: "centralized", retries: 1 }, 1, (t0) =>
    rank === victim ? t0 + half : Number.POSITIVE_INFINITY,
  );
} else {
  const slowdown = rank === size - 1 ? SLOWDOWN : 1;
  await measure("ecd", { mode: "centralized" }, slowdown);
  await measure("speculate", { mode: "centralized", retries: 1, speculate: true }, slowdown);
}
await world.close();
