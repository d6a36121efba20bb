/**
 * Coarse tasks put on one rank with their times as priorities, under the default pool at 5 ranks
 * (test/fixtures/pool-dealt.ts): rank 0 deals them one at a time, longest first (lib/pool/balance/receiver.ts).
 * The 4 longest start first, each on a rank of its own, none behind another (a rank that had just been dealt one
 * used to ask for a second before running it, and got the next longest); and a task rank 0 begins of its own while
 * the ranks it dealt to are inside the tasks they got ends before the first of those does, so no ask waits for it
 * (it used to give up standing by after 1 s and start one, and the asks that came meanwhile waited for its end;
 * now it runs the short ones at once, their priorities saying they are shorter than every task dealt: `ownTurn`).
 * Both are orders of events, not durations.
 */
import test from "ava";
import { fixture, resultLines, run } from "../helpers/run.ts";

interface Line {
  readonly rank: number;
  readonly ran: [start: number, end: number, ms: number][];
  readonly extended: number;
}

test("coarse tasks with their times as priorities: dealt longest first, one a rank, and the dealer holds up no asker", async (t) => {
  const r = await run(["-n", "5", "--timeout", "90", fixture("pool-dealt.ts")]);
  t.is(r.code, 0, r.stderr);
  const lines = resultLines<Line>(r.stdout);
  t.is(lines.length, 5);
  const all = lines.flatMap((l) => l.ran.map(([start, end, ms]) => ({ rank: l.rank, start, end, ms })));
  t.deepEqual(
    all.map((x) => x.ms).sort((a, b) => a - b),
    [150, 200, 250, 300, 1200, 1300, 1400, 1500],
    "every task ran once",
  );
  const firsts = lines.filter((l) => l.ran.length > 0).map((l) => l.ran[0]?.[2]);
  const longest = [1500, 1400, 1300, 1200];
  t.deepEqual(
    firsts.filter((ms) => longest.includes(ms as number)).sort(),
    [...longest].sort(),
    `each of the 4 longest was a rank's first task: ${JSON.stringify(lines.map((l) => l.ran.map((x) => x[2])))}`,
  );
  const firstEnd = Math.min(...all.filter((x) => longest.includes(x.ms)).map((x) => x.end));
  const own = all.filter((x) => x.rank === 0);
  t.true(
    own.filter((x) => x.start < firstEnd).every((x) => x.end <= firstEnd),
    `rank 0 was still inside a task of its own when a task it dealt ended: ${JSON.stringify(own)}, first end ${firstEnd}`,
  );
});
