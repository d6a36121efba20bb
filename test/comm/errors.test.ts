import test from "ava";
import { fixture, linesOf, run } from "../helpers/run.ts";

// test/fixtures/errors.ts, on 2 ranks in lockstep: sends to ranks out of range, bad tags (-1, 1.5, "x",
// 2^31, NaN), receives from bad sources or tags, unencodable data (Symbol -> EncodeError), collectives with
// a bad root or op each reject with the right class, code and a message naming the call and the value, and
// a round trip plus an allreduce still work after each group; an aborted receive rejects with AbortError
// and consumes nothing (also with a signal aborted beforehand); close() rejects a pending receive and every
// later call with ClosedError. The fixture then just returns: exit status 0 proves the ranks exit on their own.
test("bad calls reject with typed errors, the world stays usable, and closed ranks exit by themselves", async (t) => {
  // --timeout only turns a rank that never exits into a clear failure (status 124) instead of a hung test.
  const result = await run(["-n", "2", "--timeout", "60", fixture("errors.ts")]);
  t.is(result.code, 0, result.stderr);
  const lines = linesOf(result.stdout).sort();
  t.is(lines.length, 2, result.stdout);
  const counts = lines.map((line, r) => {
    const m = new RegExp(`^\\[${r}\\] errors ok ${r} (\\d+)$`).exec(line);
    t.truthy(m, line);
    return Number(m?.[1]);
  });
  t.true((counts[0] as number) >= 25, `checks made: ${counts[0]}`);
  t.is(counts[0], counts[1]);
});
