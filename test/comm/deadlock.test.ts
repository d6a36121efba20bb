// A job whose ranks all wait on messages that none will send is ended by the launcher with each rank's waits
// (launcher/stalls.ts, lib/comm/stall.ts), instead of hanging until --timeout; one that only looks stuck for a
// while (a rank computing, messages on their way) is left alone. The fast suite runs the cases FAST_CASES names,
// deadlock.slow.test.ts the others (test/helpers/sweep.ts).
import test from "ava";
import { fixture, linesOf, run } from "../helpers/run.ts";
import { slowOnly, sweep } from "../helpers/sweep.ts";

const APP = fixture("deadlock.mjs");
const FAST = { WORKPOOL_IDLE_CHECK_MS: "100" };
const HEAD = "workpool: deadlock: every rank waits for a message, and none is on its way, so none will come";

/** The lines of the launcher's deadlock message: its head, then one per rank. */
function deadlockLines(stderr: string): string[] {
  const lines = linesOf(stderr);
  const at = lines.findIndex((l) => l.startsWith(HEAD));
  return at < 0 ? [] : lines.slice(at);
}

/** One case of each kind: p2p, collectives, a split, a pool; the counting argument; CPU and async work. */
const FAST_CASES = new Set(["tags", "kinds", "split", "pool-distributed", "late", "crypto", "crypto-tasks"]);

const CASES: [name: string, np: number, ranks: RegExp[]][] = [
  [
    "tags",
    2,
    [
      /^ {2}rank 0 waits in barrier \(from rank 1; collective step 0\)$/,
      /^ {2}rank 1 waits in recv \(from rank 0, tag 6\); it holds messages no receive took: from rank 0, tag 5$/,
    ],
  ],
  [
    "source",
    3,
    [
      /^ {2}rank 0 waits in recv \(from rank 2\)$/,
      /^ {2}rank 1 waits in barrier \(from rank 0; collective step 0\)$/,
      /^ {2}rank 2 waits in barrier \(from rank [01]; collective step 0\)$/,
    ],
  ],
  [
    "kinds",
    3,
    [
      /^ {2}rank 0 waits in reduce \(from rank 2; collective step 0\)$/,
      /^ {2}rank 1 waits in close \(from rank [02]\)$/,
      /^ {2}rank 2 waits in barrier \(from rank 1; collective step 0\)$/,
    ],
  ],
  [
    "order",
    2,
    [
      /^ {2}rank 0 waits in allreduce \(from rank 1; collective step 0\)$/,
      /^ {2}rank 1 waits in barrier \(from rank 0; collective step 0\)$/,
    ],
  ],
  ["close", 2, [/^ {2}rank 0 waits in close \(from rank 1\)$/, /^ {2}rank 1 waits in recv \(from rank 0, tag 1\)$/]],
  [
    "split",
    4,
    [
      /^ {2}rank 0 waits in close \(from rank \d\)$/,
      /^ {2}rank 1 waits in barrier \(from rank 1 of the split, world rank 3; collective step 0\)$/,
      /^ {2}rank 2 waits in close \(from rank \d\)$/,
      /^ {2}rank 3 waits in recv \(from rank 0 of the split, world rank 1, tag 3\); it holds messages no receive took: from rank 0 of the split, world rank 1, tag 4$/,
    ],
  ],
  ...(["pool-distributed", "pool-centralized"].map((name) => [
    name,
    3,
    [
      /^ {2}rank 0 waits in run 1 of pool1$/,
      /^ {2}rank 1 waits in barrier \(from rank 0; collective step 0\)$/,
      /^ {2}rank 2 waits in barrier \(from rank 0; collective step 0\)$/,
    ],
  ]) as [string, number, RegExp[]][]),
];

for (const [name, np, ranks] of sweep(CASES, ([name]) => FAST_CASES.has(name))) {
  test(`a deadlock (${name}, ${np} ranks) ends the job, naming what every rank waits in`, async (t) => {
    const r = await run(["-n", String(np), "--timeout", "60", APP, name], FAST);
    t.is(r.code, 1, r.stderr);
    const lines = deadlockLines(r.stderr);
    t.is(lines.length, np + 1, r.stderr);
    for (const [i, pattern] of ranks.entries()) t.regex(lines[i + 1] ?? "", pattern, r.stderr);
    // No rank took another collective's message for its own (a barrier's token summed into rank 0's reduce).
    t.false(r.stdout.includes("[0] reduced"), r.stdout);
  });
}

const LIVE = ["busy", "late", "pool-long", "crypto", "crypto-tasks", "worker"];
for (const name of sweep(LIVE, (name) => FAST_CASES.has(name))) {
  test(`not a deadlock: ${name}`, async (t) => {
    const r = await run(["-n", "3", "--timeout", "60", APP, name], FAST);
    t.is(r.code, 0, r.stderr);
    t.is(linesOf(r.stdout).filter((l) => l.endsWith("closed")).length, 3, r.stdout);
  });
}

// In the slow suite: it waits for its --timeout.
slowOnly(test)(
  "a wait the check cannot declare (a rank polls) ends at --timeout, which says what ranks last waited in",
  async (t) => {
    // The timeout leaves rank 0 some 150 checks (100 ms each) to report after its start, even under the slow
    // suite's load (10 s once fell short there). launcher/stalls.test.ts checks the list in-process.
    const r = await run(["-n", "2", "--timeout", "20", APP, "poll"], FAST);
    t.is(r.code, 124, r.stderr);
    const lines = linesOf(r.stderr);
    const at = lines.indexOf("workpool: job timed out after 20 s; stopping 2 ranks");
    t.true(at >= 0, r.stderr);
    t.deepEqual(lines.slice(at + 1), [
      "what ranks last said they wait in:",
      "  rank 0 waits in recv (from rank 1, tag 9)",
      "ranks still busy (running their own code, or waiting on a timer, a file or a socket rather than on " +
        "messages; ranks tell every second): rank 1",
    ]);
  },
);
