import test, { type ExecutionContext } from "ava";
import { fixture, linesOf, type RunResult, run, runAlone } from "../helpers/run.ts";
import { inFastSuite, sweep } from "../helpers/sweep.ts";

// test/fixtures/primitives.ts runs send/recv (specific and ANY source and tag), tryRecv, barrier, bcast,
// reduce (every built-in op, bigints, arrays, typed arrays, a non-commutative custom op), allreduce,
// gather, allgather and scatter, asserting each result; every rank prints `ok <rank> of <size>`.
const PRIMITIVES = fixture("primitives.ts");

function allRanksOk(t: ExecutionContext, result: RunResult, size: number): void {
  t.is(result.code, 0, result.stderr);
  const expected = Array.from({ length: size }, (_, r) => `[${r}] ok ${r} of ${size}`);
  t.deepEqual(linesOf(result.stdout).sort(), expected.sort());
}

// 16 ranks in the slow suite (primitives.slow.test.ts): 17 node processes on a 2-core machine.
for (const size of sweep([1, 2, 3, 4, 16], (n) => n < 16)) {
  test(`every primitive works on ${size} rank${size === 1 ? "" : "s"}`, async (t) => {
    allRanksOk(t, await run(["-n", String(size), PRIMITIVES]), size);
  });
}

if (inFastSuite())
  test("every primitive works on 4 ranks over tcp", async (t) => {
    allRanksOk(t, await run(["-n", "4", "--transport", "tcp", PRIMITIVES]), 4);
  });

if (inFastSuite())
  test("without the launcher an app is one rank and every primitive works", async (t) => {
    const result = await runAlone(PRIMITIVES);
    t.is(result.code, 0, result.stderr);
    t.is(result.stdout, "ok 0 of 1\n");
  });
