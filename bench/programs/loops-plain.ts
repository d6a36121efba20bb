// Rank program for `npm run bench -- loops`, the short-loop table: `world.parallelFor` on the launcher's pool
// (what an app calls, no options) against the plain loop it replaces, on rank 0 of the same job.
//   loops-plain.ts <n> [repeats]
// Each repeat times the parallel loop (from a barrier to the slowest rank's end), then the plain loop on rank 0
// while the other ranks wait at a barrier. Rank 0 prints one JSON line: the best of each, both sums, and the
// first (cold) parallel time. The body is one Math.sqrt: about 3 ns an iteration, so a loop's own costs, per
// iteration and per loop, are all that separates the two.
import { connect } from "workpool";

const n = Number(process.argv[2] ?? 3_000_000);
const repeats = Number(process.argv[3] ?? 10);
const world = await connect();
const body = (i: number) => Math.sqrt(i);

function plain(): number {
  let sum = 0;
  for (let i = 0; i < n; i++) sum += body(i);
  return sum;
}

let parallelMs = Number.POSITIVE_INFINITY;
let plainMs = Number.POSITIVE_INFINITY;
let firstMs = 0;
let parallelSum = 0;
let plainSum = 0;
for (let k = 0; k < repeats; k++) {
  await world.barrier();
  const t0 = performance.now();
  const r = await world.parallelFor(0, n, body);
  const ms = await world.allreduce(performance.now() - t0, "max");
  if (k === 0) firstMs = ms;
  parallelMs = Math.min(parallelMs, ms);
  parallelSum = r.result ?? 0;
  await world.barrier();
  if (world.rank === 0) {
    const p0 = performance.now();
    plainSum = plain();
    plainMs = Math.min(plainMs, performance.now() - p0);
  }
}
await world.barrier();
if (world.rank === 0) {
  // The sums add the same terms in another order: equal to a few parts in 1e15, not bit for bit.
  const agree = Math.abs(parallelSum - plainSum) <= 1e-12 * Math.abs(plainSum);
  if (!agree) throw new Error(`parallelFor summed ${parallelSum}, the plain loop ${plainSum}`);
  console.log(JSON.stringify({ n, ranks: world.size, parallelMs, plainMs, firstMs, agree }));
}
await world.close();
