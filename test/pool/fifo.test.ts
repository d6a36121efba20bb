/**
 * `order=fifo` across ranks (test/fixtures/pool-fifo.ts): work taken from a fifo queue leaves alternately, so
 * each rank goes on through every other task in the order of the puts, and the order holds across both. (It
 * used to leave as the oldest half in order: the thief ran 1, 2, 3 ... while its victim jumped to the 200s, so
 * an app searching tasks in put order for the first solution gained nothing from a second rank.)
 */
import test from "ava";
import { fixture, resultLines, run } from "../helpers/run.ts";

test("order=fifo on 2 ranks: both ranks run the first tasks put", async (t) => {
  const r = await run(["-n", "2", "--timeout", "60", fixture("pool-fifo.ts")]);
  t.is(r.code, 0, r.stderr);
  const lines = resultLines<{ rank: number; ran: number[] }>(r.stdout);
  t.is(lines.length, 2);
  const all = lines.flatMap((l) => l.ran).sort((a, b) => a - b);
  t.deepEqual(
    all,
    Array.from({ length: 400 }, (_, i) => i),
    "every task once",
  );
  for (const l of lines) {
    // Each rank ran a fair part of the first 40: neither jumped far ahead in the order. (Not each rank's whole
    // order: tasks it steals back later may be older than some it ran.)
    const early = l.ran.filter((i) => i < 40).length;
    t.true(early >= 10, `rank ${l.rank} ran ${early} of tasks 0-39: ${JSON.stringify(l.ran.slice(0, 30))}`);
  }
});
