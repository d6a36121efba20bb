import test from "ava";
import { fixture, linesOf, run, runAlone } from "../helpers/run.ts";

// test/fixtures/types.ts sends typed arrays (every kind, and a subarray), Buffer, Map, Set, Date, BigInt
// (beyond 64 bits too), arrays of BigInt and nested objects point to point, to self, by bcast and by
// allgather, and checks each arrives deep-equal with the same prototypes.
const TYPES = fixture("types.ts");

test("values keep their types across ranks: typed arrays, Map, Set, Date, BigInt, nested objects", async (t) => {
  const result = await run(["-n", "3", TYPES]);
  t.is(result.code, 0, result.stderr);
  // rank 0 and 1 also check the point-to-point exchange; every rank checks self, bcast and 3 allgathered.
  t.deepEqual(linesOf(result.stdout).sort(), ["[0] types ok 0 6", "[1] types ok 1 6", "[2] types ok 2 5"]);
});

test("values keep their types on a one-rank world without the launcher", async (t) => {
  const result = await runAlone(TYPES);
  t.is(result.code, 0, result.stderr);
  t.is(result.stdout, "types ok 0 3\n");
});
