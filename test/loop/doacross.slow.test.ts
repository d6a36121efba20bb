/**
 * DOACROSS through the real launcher: the LCS wavefront (apps/lcs, `world.doacross`) agrees with its
 * sequential dynamic program on several rank counts, with the block size chosen at run time and fixed.
 */
import test from "ava";
import { join } from "node:path";
import { fixture, linesOf, ROOT, rank0, run } from "../helpers/run.ts";

const LCS = join(ROOT, "apps", "lcs");

for (const [n, args] of [
  [1, ["--length", "500"]],
  [2, ["--length", "1500"]],
  [3, ["--length", "1200", "--block", "7"]],
  [5, ["--length", "900", "--seed", "3"]],
] as const) {
  test(`LCS wavefront on ${n} rank(s) ${args.join(" ")} matches the sequential program`, async (t) => {
    const r = await run(["-n", String(n), "--timeout", "90", LCS, ...args, "--verify", "--json"]);
    t.is(r.code, 0, r.stderr);
    const line = rank0(r.stdout).find((l) => l.startsWith("{"));
    t.truthy(line, r.stdout);
    const result = JSON.parse(line as string) as { verified: boolean; length: number; block: number };
    t.true(result.verified);
    t.true(result.length > 0);
    if ((args as readonly string[]).includes("--block")) t.is(result.block, 7);
  });
}

for (const [args, line] of [
  [["--length", "0"], /^lcs: option --length must be a whole number from 1 to 1000000; got "0"$/],
  [["--length", "50", "--block", "51"], /^lcs: option --block must be a whole number from 1 to 50; got "51"$/],
  [["--frobnicate"], /^lcs: unknown option --frobnicate \(known: /],
] as const) {
  test(`LCS: ${args.join(" ")} is one line on rank 0 and status 2`, async (t) => {
    const r = await run(["-n", "2", "--timeout", "60", LCS, ...args]);
    t.is(r.code, 2, r.stderr);
    t.is(r.stdout, "");
    const lines = rank0(r.stderr);
    t.is(lines.length, 1, r.stderr);
    t.regex(lines[0] ?? "", line);
  });
}

for (const n of [2, 3, 5]) {
  test(`a small DOACROSS loop then close() on ${n} ranks: no rank leaves while the next still times round trips to it`, async (t) => {
    // A rank answers its successor's pings from its listener, which close() shuts; before the fix the first
    // rank, done with its 4 rows at once, closed under its successor's pings and the others hung.
    const r = await run(["-n", String(n), "--timeout", "60", fixture("doacross-close.ts"), "4", "8"]);
    t.is(r.code, 0, r.stderr);
    t.is(linesOf(r.stdout).filter((l) => /^\[\d+\] done \d+$/.test(l)).length, n, r.stdout);
  });
}

test("doacross rejects bad arguments, naming them", async (t) => {
  const { connect, InvalidArgumentError } = await import("../../lib/index.ts");
  const world = await connect();
  await t.throwsAsync(
    world.doacross(-1, 5, () => []),
    {
      instanceOf: InvalidArgumentError,
      message: "doacross: `m` (rows) must be a non-negative integer; got -1",
    },
  );
  await t.throwsAsync(
    world.doacross(3, 5, () => [], { blockSize: 0 }),
    {
      instanceOf: InvalidArgumentError,
      message: "doacross: option `blockSize` must be a positive integer; got 0",
    },
  );
  await t.throwsAsync(
    world.doacross(2, 4, () => [1, 2, 3]),
    {
      instanceOf: InvalidArgumentError,
      message: /body must return one entry per row/,
    },
  );
  await world.close();
});
