// The emulated workload both pool benchmarks use, so their figures compare: tasks whose "work" is a timed
// wait drawn from a Pareto distribution (alpha 3, mean 20 ms), and a handler that measures the waits.
import { Random } from "../../apps/common/random.ts";

export const MEAN_MS = 20;
const ALPHA = 3;
const XM = (MEAN_MS * (ALPHA - 1)) / ALPHA;

/** One task duration (ms) drawn from the distribution. */
export function drawEmulatedMs(random: Random): number {
  return XM / (1 - random.next()) ** (1 / ALPHA);
}

/** Puts task durations (ms) drawn from the distribution until they add up to `budgetMs`. */
export function putEmulatedWork(put: (ms: number) => void, budgetMs: number, seed: number): void {
  const random = new Random(seed);
  let total = 0;
  while (total < budgetMs) {
    const ms = drawEmulatedMs(random);
    put(ms);
    total += ms;
  }
}

/**
 * A handler that waits `ms * slowdown` and records the wait actually measured, in units of a normal-speed
 * worker (timer overshoot counts as work), for the lower bound.
 */
export function emulatedWorker(slowdown = 1) {
  const measured = { work: 0, longest: 0 };
  const handler = async (ms: number) => {
    const s = performance.now();
    await new Promise((resolve) => setTimeout(resolve, ms * slowdown));
    const unit = (performance.now() - s) / slowdown;
    measured.work += unit;
    if (unit > measured.longest) measured.longest = unit;
  };
  return { handler, measured };
}
