import test from "ava";
import { fixture, linesOf, run } from "../helpers/run.ts";

// test/fixtures/comm-split.ts on 5 ranks: split by parity with keys reversing the order (group ranks,
// point-to-point, every collective in group order, no message crossing between the world and a group on the
// same tag, world and group collectives at once), a pool in each group at the same time (centralized, then
// distributed; task trees whose tasks put tasks, each task run once, results over the group only), a split
// with color undefined (that rank takes no part in the others' pool), a split of a split (collectives, a
// pool), bad colors and keys, two splits at once refused, close() of a group being local, and the world's
// close ending every group. Each rank prints `split ok <rank>` once every check has passed, and must exit 0.
// The split plan itself (order, blocks of contexts) is unit-tested in collectives.test.ts.
test("sub-communicators: own ranks, messages, collectives and pools; undefined color; nested splits", async (t) => {
  const result = await run(["-n", "5", "--timeout", "100", fixture("comm-split.ts")]);
  t.is(result.code, 0, result.stderr);
  t.deepEqual(
    linesOf(result.stdout).sort(),
    [0, 1, 2, 3, 4].map((r) => `[${r}] split ok ${r}`),
  );
});
