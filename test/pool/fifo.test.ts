/**
 * `order=fifo` across ranks (test/fixtures/pool-fifo.ts): work taken from a fifo queue leaves alternately, so
 * each rank goes on through every other task in the order of the puts, and the order holds across both. (It
 * used to leave as the oldest half in order: the thief ran 1, 2, 3 ... while its victim jumped to the 200s, so
 * an app searching tasks in put order for the first solution gained nothing from a second rank.)
 */
import test from "ava";
import { fixture, resultLines, run } from "../helpers/run.ts";

test("order=fifo on 2 ranks: after a steal both ranks go on from where it began, in put order", async (t) => {
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
  // Where the first steal began, the first task rank 1 ran: after it, both ranks go on from there, every other
  // task each (given the oldest half in order, rank 0 went on some 200 tasks further). Whenever the steal came.
  const ran = (rank: number) => lines.find((l) => l.rank === rank)?.ran ?? [];
  const stolen = ran(1)[0];
  if (stolen === undefined) return t.fail(`rank 1 got no work: ${JSON.stringify(ran(0).slice(0, 30))}`);
  const next = ran(0).find((i) => i > stolen);
  const shown = JSON.stringify({ 0: ran(0).slice(0, 40), 1: ran(1).slice(0, 20) });
  t.true(next !== undefined && next < stolen + 10, `rank 0 went on at ${next} after the steal at ${stolen}: ${shown}`);
  t.true(ran(1).length < 2 || (ran(1)[1] as number) < stolen + 10, `rank 1 went on after ${stolen}: ${shown}`);
});
