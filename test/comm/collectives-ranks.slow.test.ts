import test, { type ExecutionContext } from "ava";
import { fixture, linesOf, type RunResult, run, runAlone } from "../helpers/run.ts";

// test/fixtures/comm-collectives.ts runs sendrecv (a ring; pairs exchanging 16 MiB both ways at once, past
// the transport's back-pressure mark; to itself), alltoall, scan, exscan and reduceScatter (built-in ops on
// numbers, bigints, booleans and typed arrays, and a non-commutative function), asserting each result, then
// their bad calls (typed errors naming the call and the value, EncodeError with the path of a function or a
// symbol); every rank prints `collectives ok <rank> of <size>`. Sizes around a power of two, since
// reduceScatter and scan treat the ranks past one differently. The algorithms on every size up to 65 and on
// 1024 simulated ranks are in collectives.test.ts.
const COLLECTIVES = fixture("comm-collectives.ts");

function allRanksOk(t: ExecutionContext, result: RunResult, size: number): void {
  t.is(result.code, 0, result.stderr);
  const expected = Array.from({ length: size }, (_, r) => `[${r}] collectives ok ${r} of ${size}`);
  t.deepEqual(linesOf(result.stdout).sort(), expected.sort());
}

for (const size of [2, 3, 8]) {
  test(`sendrecv, alltoall, scan, exscan and reduceScatter on ${size} ranks`, async (t) => {
    allRanksOk(t, await run(["-n", String(size), "--timeout", "100", COLLECTIVES]), size);
  });
}

test("sendrecv, alltoall, scan, exscan and reduceScatter on one rank without the launcher", async (t) => {
  const result = await runAlone(COLLECTIVES);
  t.is(result.code, 0, result.stderr);
  t.is(result.stdout, "collectives ok 0 of 1\n");
});
