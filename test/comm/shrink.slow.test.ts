/**
 * World#shrink (issue 30): after a rank's death the survivors shrink the world and go on with collectives
 * (allreduce, barrier) and with new pools on the shrunk communicator, run after run, with real ranks through the
 * launcher (test/fixtures/shrink.ts: rank 1 SIGKILLs itself in the middle of the second of three runs of a pool
 * with `retries`).
 */
import test from "ava";
import { fixture, linesOf, ok, rank0, run } from "../helpers/run.ts";

for (const mode of ["distributed", "centralized"] as const) {
  test(`${mode}: a death in run 2; every run exact, collectives and a fresh pool work on the shrunk world`, async (t) => {
    const r = await run(["-n", "4", "--timeout", "100", fixture("shrink.ts"), mode, "2", "1"]);
    ok(t, r);
    const lines = rank0(r.stdout);
    t.deepEqual(
      lines.map((l) => /survivors (\d)/.exec(l)?.[1]),
      ["4", "3", "3"],
      r.stdout,
    );
    for (const l of lines) t.regex(l, /^run \d: result (\d+) of \1, survivors \d, fresh pool \1 of \1$/);
    t.is(linesOf(r.stderr).filter((l) => l.startsWith("workpool: rank 1 died (killed by SIGKILL)")).length, 1);
  });
}

test("shrink on a communicator from split rejects, naming the call", async (t) => {
  const { connect } = await import("../../lib/index.ts");
  const world = await connect();
  const sub = await world.split(0);
  await t.throwsAsync(() => (sub as NonNullable<typeof sub>).shrink(), {
    name: "InvalidArgumentError",
    message: /^shrink: only the world shrinks/,
  });
  const alone = await world.shrink();
  t.is(alone.size, 1);
  await world.close();
});
