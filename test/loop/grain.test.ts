/** The grain and block-size rules of lib/loop/grain.ts (seed 001), and its filter of measured times. */
import test from "ava";
import { doacrossBlock, doallGrain, TimeFilter } from "../../lib/loop/grain.ts";

test("DOALL grain: the model optimum, where overhead and end skew are equal, when it costs under the target", (t) => {
  // 1e8 iterations of 1 us (100 s), ranges costing 2 us: sqrt(100000 ms x 0.002 ms) = 14.1 ms per range.
  const g = doallGrain({ iterations: 1e8, iterationMs: 0.001, rangeCostMs: 0.002, overhead: 0.02 });
  t.is(g.grain, 14142);
  t.true(g.predictedOverhead < 0.02);
  t.true(Math.abs(g.predictedOverhead - (g.grain * 0.001) / 1e5) < 1e-4, "overhead = end skew, as a fraction");
});

test("DOALL grain: a range lasts a scheduler slice when the end skew that costs stays under the target", (t) => {
  // 1e6 iterations of 1 us (1 s): sqrt(1000 x 0.002) = 1.4 ms < 4 ms <= 0.02 x 1000 ms.
  t.is(doallGrain({ iterations: 1e6, iterationMs: 0.001, rangeCostMs: 0.002, overhead: 0.02 }).grain, 4000);
  // 1e5 iterations (100 ms): the slice would be 4% of the block: 0.02 x 100 ms = 2 ms instead.
  t.is(doallGrain({ iterations: 1e5, iterationMs: 0.001, rangeCostMs: 0.002, overhead: 0.02 }).grain, 2000);
});

test("DOALL grain: a short loop keeps each range at least its cost over the target overhead", (t) => {
  // 2000 iterations of 1 us (2 ms): sqrt(2 x 0.002) = 0.063 ms < 0.002 / 0.02 = 0.1 ms.
  const g = doallGrain({ iterations: 2000, iterationMs: 0.001, rangeCostMs: 0.002, overhead: 0.02 });
  t.is(g.grain, 100);
  t.true(Math.abs(g.predictedOverhead - 0.02) < 1e-9);
});

test("DOALL grain: long iterations get one per range, and no range exceeds the block", (t) => {
  t.is(doallGrain({ iterations: 50, iterationMs: 10, rangeCostMs: 0.002, overhead: 0.02 }).grain, 1);
  t.is(doallGrain({ iterations: 3, iterationMs: 1e-6, rangeCostMs: 0.002, overhead: 0.02 }).grain, 3);
  t.is(doallGrain({ iterations: 0, iterationMs: 1, rangeCostMs: 0.002, overhead: 0.02 }).grain, 1);
});

test("DOACROSS block: the seed's optimum M = sqrt((t_seq (1 - 1/P) + t_incr m (P - 2)) / t_fixed)", (t) => {
  // P = 4, m = 1000 rows of 0.1 ms each rank: t_seq = 400 ms; t_fixed 0.1 ms, no per-element cost.
  // M = sqrt(400 x 0.75 / 0.1) = 54.8, b = 1000 / 54.8 = 18.
  t.is(doacrossBlock({ ranks: 4, m: 1000, iterationMs: 0.1, fixedMs: 0.1, perIterationMs: 0 }), 18);
  // Dearer messages, bigger blocks; one rank, one block.
  t.true(doacrossBlock({ ranks: 4, m: 1000, iterationMs: 0.1, fixedMs: 1, perIterationMs: 0 }) > 18);
  t.is(doacrossBlock({ ranks: 1, m: 1000, iterationMs: 0.1, fixedMs: 0.1, perIterationMs: 0 }), 1000);
  t.is(doacrossBlock({ ranks: 8, m: 5, iterationMs: 100, fixedMs: 0.1, perIterationMs: 0 }), 1);
});

test("the filter believes a slowdown sooner than a speed-up (seed Table 1)", (t) => {
  const slow = new TimeFilter();
  slow.add(1);
  slow.add(2);
  slow.add(2);
  t.is(slow.ms, 2, "two slower measurements in a row are believed at once");
  const fast = new TimeFilter();
  fast.add(2);
  fast.add(1);
  fast.add(1);
  t.true(fast.ms > 1.3, `after two faster measurements: ${fast.ms}`);
  for (let k = 0; k < 20; k++) fast.add(1);
  t.true(Math.abs(fast.ms - 1) < 0.01);
  t.is(fast.add(Number.NaN), fast.ms, "a measurement that is not a time changes nothing");
});
