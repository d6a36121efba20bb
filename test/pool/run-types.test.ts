/**
 * `pool.run<R, S>` (and `world.parallelFor<R, S>`): the stop value's type and the reduce's type, both without a
 * cast. The fixture's type
 * assertions are checked by `tsc --noEmit`; here it runs on real ranks, where `stopped` tells which it got.
 */
import test from "ava";
import { fixture, run } from "../helpers/run.ts";

for (const [n, pool] of [
  [1, "centralized"],
  [3, "centralized"],
  [3, "distributed"],
] as const) {
  test(`a typed stop value and a typed reduce on ${n} rank${n > 1 ? "s" : ""} under ${pool}`, async (t) => {
    const r = await run(["-n", String(n), "--timeout", "60", "--pool", pool, fixture("pool-stop-types.ts")]);
    t.is(r.code, 0, r.stderr);
    const lines = r.stdout.split("\n").filter((l) => l.includes("] result "));
    t.is(lines.length, n);
    for (const line of lines) {
      t.deepEqual(JSON.parse(line.slice(line.indexOf("result ") + 7)), {
        stopped: true,
        found: { id: 300, path: "100101100" },
        plain: 5,
        at: 700,
      });
    }
  });
}
