import test from "ava";
import { fixture, linesOf, run } from "../helpers/run.ts";

// Every rank sends every rank (itself included) two messages on each of many tags (0..12, powers of two,
// 2^31-1; small tags equal collective sequence numbers) and keeps an ANY/ANY receive pending, then runs
// every collective, then receives all the messages: nothing lost, nothing crossed between the two.
for (const size of [2, 5]) {
  test(`collectives run correctly with point-to-point traffic of every tag in flight (${size} ranks)`, async (t) => {
    const result = await run(["-n", String(size), fixture("interleave.ts")]);
    t.is(result.code, 0, result.stderr);
    const expected = Array.from({ length: size }, (_, r) => `[${r}] interleave ok ${r}`);
    t.deepEqual(linesOf(result.stdout).sort(), expected.sort());
  });
}
