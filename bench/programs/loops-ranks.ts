// Rank program for `npm run bench -- loops`. Rank 0 prints one JSON line per measurement.
//   loops-ranks.ts sweep <iterationUs> <seconds> [slowRank|emulate]
//     One DOALL loop of iterations that each take about `iterationUs` (a calibrated spin, or for 1000 us and
//     more a timed wait), run with the automatic grain and with every power-of-two grain (each twice,
//     interleaved, the faster kept), then grain 1 and an mpi4py.futures-like master dealing one index per
//     request, both on a prefix and projected to the whole loop. With `slowRank`, that rank pins itself to
//     CPU 1 beside a busy loop pinned there too, and the others pin to CPU 0. With `emulate`, iterations under
//     1000 us are emulated instead of spun: each adds its time to a debt that the rank sleeps off
//     (Atomics.wait, which blocks without using the CPU) once it reaches EMULATE_PAY_MS, so many ranks on
//     few cores each run as if alone and only the loop's own overhead competes for the cores.
import { spawn } from "node:child_process";
import { connect } from "workpool";

const [what = "sweep", usArg = "1", secondsArg = "0.4", slowArg] = process.argv.slice(2);
const iterationUs = Number(usArg);
const world = await connect();
const timed = iterationUs >= 1000;
const emulated = slowArg === "emulate" && !timed;
const slowRank = slowArg === undefined || slowArg === "emulate" ? -1 : Number(slowArg);

if (slowRank >= 0) {
  const cpu = world.rank === slowRank ? 1 : 0;
  spawn("taskset", ["-cp", String(cpu), String(process.pid)], { stdio: "ignore" });
  if (world.rank === slowRank) {
    const hog = spawn("taskset", ["-c", "1", process.execPath, "-e", "for(;;){}"], { stdio: "ignore" });
    // The hog must not keep this rank alive once the loop is done: unreferenced, and killed as the rank exits.
    hog.unref();
    process.on("exit", () => hog.kill("SIGKILL"));
  }
}

/** Steps of the spin per iteration, calibrated on rank 0 (the fastest of several tries) and shared. */
function spin(steps: number, i: number): number {
  let x = i | 0;
  for (let k = 0; k < steps; k++) x = (Math.imul(x, 1103515245) + 12345) | 0;
  return x & 1;
}
let steps = 0;
if (!timed && !emulated) {
  // Calibrated with a trip count known only at run time, as in the loop: with a literal one (spin(10, i)) the
  // compiler unrolled the spin, and a step measured 0.66 ns against 1.25 ns in the loop, so every "1 us"
  // iteration took 1.9 us.
  const calSteps = await world.bcast(1000, 0);
  let best = Number.POSITIVE_INFINITY;
  if (world.rank === 0) {
    for (let k = 0; k < 7; k++) {
      const t0 = performance.now();
      let s = 0;
      for (let i = 0; i < 2000; i++) s += spin(calSteps, i);
      best = Math.min(best, (performance.now() - t0) / 2000 / calSteps + s * 0);
    }
  }
  const perStep = await world.bcast(best, 0);
  steps = Math.max(1, Math.round(iterationUs / 1000 / perStep));
}
/** Emulated work: ms owed and not yet slept (below zero after a sleep that overshot: the next iterations are free). */
let owed = 0;
const EMULATE_PAY_MS = 0.2;
const sleeper = new Int32Array(new SharedArrayBuffer(4));
function emulate(i: number): number {
  owed += iterationUs / 1000;
  if (owed >= EMULATE_PAY_MS) {
    const t0 = performance.now();
    Atomics.wait(sleeper, 0, 0, owed);
    owed -= performance.now() - t0;
  }
  return i & 1;
}
const body = timed
  ? (i: number) => new Promise<number>((resolve) => setTimeout(() => resolve(i & 1), iterationUs / 1000))
  : emulated
    ? emulate
    : (i: number) => spin(steps, i);

// Working ranks: the whole pool is distributed (every rank works).
const P = world.size;
const n =
  timed || emulated
    ? Math.max(P, Math.round((P * Number(secondsArg) * 1e6) / iterationUs))
    : Math.max(P, Math.round((Math.min(P, 2) * Number(secondsArg) * 1e6) / iterationUs));
const pool = world.pool<never>({ mode: "distributed" });
let expected: number | undefined;

async function timeLoop(grain: number | undefined, end = n): Promise<{ ms: number; grain: number }> {
  await world.barrier();
  const t0 = performance.now();
  const r = await pool.forEach(0, end, body, grain === undefined ? {} : { grain });
  const ms = performance.now() - t0;
  if (end === n) {
    expected ??= r.result;
    if (r.result !== expected) throw new Error(`grain ${grain}: result ${r.result}, expected ${expected}`);
  }
  const grains = await world.gather(r.loop.grain, 0);
  return { ms: await world.allreduce(ms, "max"), grain: Math.max(...(grains ?? [0])) };
}

const out = (o: object) => {
  if (world.rank === 0) console.log(JSON.stringify(o));
};

// Warm-up (JIT, connections), then automatic and fixed grains, interleaved, each twice.
await timeLoop(undefined, Math.min(n, 1000));
const grains: number[] = [];
for (let g = 1; g <= Math.ceil(n / P); g *= 2) grains.push(g);
const best = new Map<string, { ms: number; grain: number }>();
const keep = (label: string, r: { ms: number; grain: number }) => {
  const was = best.get(label);
  if (!was || r.ms < was.ms) best.set(label, r);
};
/** A grain whose run took this many times the best so far is not run again, nor any smaller one. */
const GIVE_UP = 4;
for (let round = 0; round < 2; round++) {
  keep("auto", await timeLoop(undefined));
  let fastest = Number.POSITIVE_INFINITY;
  for (const g of [...grains].reverse()) {
    // Small grains of a fine loop take minutes: skip them once the times rise steeply (the sweep runs downwards).
    const prior = best.get(`fixed ${g}`);
    if (round === 1 && prior === undefined) continue;
    const r = await timeLoop(g);
    keep(`fixed ${g}`, r);
    fastest = Math.min(fastest, r.ms);
    if (round === 0 && r.ms > GIVE_UP * fastest) break;
  }
  keep("auto", await timeLoop(undefined));
}
// Grain 1, and an mpi4py.futures-like executor (a master holds every index and deals one per request),
// timed on a prefix and projected to the whole loop.
const prefix = Math.min(n, timed ? n : Math.max(P, Math.round(20_000 / Math.max(1, iterationUs))));
const one = await timeLoop(1, prefix);
const master = world.pool<number>({ mode: "centralized", chunk: 1 });
if (world.rank === 0) for (let i = 0; i < prefix; i++) master.put(i);
await world.barrier();
const t0 = performance.now();
await master.run((i) => body(i));
const mpiMs = await world.allreduce(performance.now() - t0, "max");

let bestFixed: { ms: number; grain: number } = { ms: Number.POSITIVE_INFINITY, grain: 0 };
for (const g of grains) {
  const r = best.get(`fixed ${g}`);
  if (r && r.ms < bestFixed.ms) bestFixed = { ms: r.ms, grain: g };
}
const auto = best.get("auto") as { ms: number; grain: number };
out({
  what,
  iterationUs,
  ranks: P,
  n,
  timed,
  emulated,
  steps,
  autoMs: auto.ms,
  autoGrain: auto.grain,
  bestFixedMs: bestFixed.ms,
  bestFixedGrain: bestFixed.grain,
  swept: grains.filter((g) => best.has(`fixed ${g}`)).length,
  grain1Ms: (one.ms * n) / prefix,
  mpiMs: (mpiMs * n) / prefix,
  prefix,
  slowRank,
});
await world.close();
