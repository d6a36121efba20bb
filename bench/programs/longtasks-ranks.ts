/**
 * The rank program of `npm run bench -- longtasks`: coarse, uneven synchronous tasks all put on rank 0 (issue 29).
 *
 *   longtasks-ranks.ts KIND TASKS MIN_MS MAX_MS SEED [hint]
 *
 * KIND `spin`: each task busy-loops on the clock for its time (real synchronous work: the rank answers no message
 * meanwhile); KIND `wait`: each task blocks its thread for its time with Atomics.wait (synchronous too, but burns
 * no core, so many ranks can be emulated on few cores). Task times are drawn uniformly in MIN_MS..MAX_MS from a
 * seeded generator; with `hint`, each is put with its drawn time as its priority (an app that knows its tasks'
 * sizes, as a cost model would tell it). Each task's time is also measured where it ran (a busy rank is descheduled at times on a
 * loaded machine, so a task can take longer than drawn), and the lower bound is taken from the measured times:
 * max(sum / ranks that run tasks, longest); the drawn sum is printed too.
 *
 * Prints one JSON line on rank 0: `{"mode","ms","drawnMs","sumMs","longestMs","bound","ranks","tasks","ideal",
 * "idealMedian", "perRank"}`; `ranks` is the number of ranks that ran tasks (the bound's divisor); `ideal`, what a
 * central greedy scheduler with free messages reaches on the drawn times (idealGreedy); `idealMedian`, the same
 * scheduler's median over orders of the tasks (idealAnyOrder).
 */
import { connect } from "workpool";

const [kind = "spin", tasksArg = "40", minArg = "20", maxArg = "300", seedArg = "11", hintArg = ""] =
  process.argv.slice(2);
/** `hint`: each task is put with its expected time as its priority, so the longest run first anywhere. */
const hint = hintArg === "hint";
const tasks = Number(tasksArg);
const minMs = Number(minArg);
const maxMs = Number(maxArg);
const world = await connect();

const blocker = new Int32Array(new SharedArrayBuffer(4));
function work(ms: number): void {
  if (kind === "wait") {
    Atomics.wait(blocker, 0, 0, ms);
    return;
  }
  const end = performance.now() + ms;
  while (performance.now() < end);
}

const times: number[] = [];
let state = Number(seedArg);
for (let i = 0; i < tasks; i++) {
  state = (state * 1103515245 + 12345) % 2147483648;
  times.push(minMs + (state / 2147483648) * (maxMs - minMs));
}

/**
 * What the best online scheduler reaches on these draws: a central one with free messages that hands each task,
 * newest first (the pool's default order), to the first worker to become free, as makespan / bound over the
 * drawn times. Only one that knows every task's time in advance (longest first, `longestFirst`: the pool's order
 * with `hint`) gets much nearer the bound.
 */
function idealGreedy(drawn: readonly number[], workers: number, longestFirst: boolean): number {
  return greedyRatio(longestFirst ? [...drawn].sort((a, b) => b - a) : [...drawn].reverse(), workers);
}

/** Makespan / bound of giving the tasks, in `order`, each to the first of `workers` to become free. */
function greedyRatio(order: readonly number[], workers: number): number {
  const free = new Array<number>(workers).fill(0);
  for (const ms of order) {
    let k = 0;
    for (let w = 1; w < workers; w++) if ((free[w] as number) < (free[k] as number)) k = w;
    free[k] = (free[k] as number) + ms;
  }
  const bound = Math.max(order.reduce((a, b) => a + b, 0) / workers, Math.max(...order));
  return Math.max(...free) / bound;
}

/**
 * The same scheduler without the luck of one order: the median of `greedyRatio` over 1,001 seeded shuffles of
 * the tasks. A scheduler that does not know the tasks' times meets them in an order that says nothing of their
 * sizes, so this, not the newest-first figure of one draw, is what it can expect.
 */
function idealAnyOrder(drawn: readonly number[], workers: number): number {
  let s = 29;
  const next = () => (s = (s * 1103515245 + 12345) % 2147483648) / 2147483648;
  const ratios: number[] = [];
  for (let k = 0; k < 1001; k++) {
    const order = [...drawn];
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(next() * (i + 1));
      [order[i], order[j]] = [order[j] as number, order[i] as number];
    }
    ratios.push(greedyRatio(order, workers));
  }
  return ratios.sort((a, b) => a - b)[500] as number;
}

const pool = world.pool<number>();
if (world.rank === 0) for (const ms of times) pool.put(ms, hint ? { priority: ms } : undefined);
await world.barrier();
const t0 = performance.now();
let measuredMs = 0;
let longestMs = 0;
const { result } = await pool.run((ms) => {
  const s = performance.now();
  work(ms);
  const took = performance.now() - s;
  measuredMs += took;
  longestMs = Math.max(longestMs, took);
  return 1;
});
const ms = performance.now() - t0;
const mine = pool.stats()?.tasksExecuted ?? 0;
const perRank = await world.gather([mine, measuredMs, longestMs], 0);
if (world.rank === 0) {
  const config = pool.config;
  // Ranks that run tasks: every rank, except a centralized coordinator that only deals.
  const workers = config.mode === "centralized" && !config.coordinatorWorks ? world.size - 1 : world.size;
  const all = perRank as [number, number, number][];
  const drawnMs = times.reduce((a, b) => a + b, 0);
  const sumMs = all.reduce((a, r) => a + r[1], 0);
  const longest = Math.max(...all.map((r) => r[2]));
  const bound = Math.max(sumMs / workers, longest);
  const counts = all.map((r) => r[0]);
  const ideal = idealGreedy(times, workers, hint);
  const line = {
    mode: config.mode,
    ms,
    drawnMs,
    sumMs,
    longestMs: longest,
    bound,
    ranks: workers,
    tasks: result,
    ideal,
    idealMedian: hint ? ideal : idealAnyOrder(times, workers),
  };
  console.log(JSON.stringify({ ...line, perRank: counts }));
}
await world.close();
