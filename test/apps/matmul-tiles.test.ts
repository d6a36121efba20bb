import test from "ava";
import { join } from "node:path";
import { ROOT, run } from "../helpers/run.ts";

const MATMUL = join(ROOT, "examples", "matmul-tiles.ts");

// The tiles example (issue 29): world.map gives rank 0 every tile's block in tile order, under both pool modes,
// and the assembled product equals the sequential one entry by entry.
for (const [n, pool] of [
  [1, "distributed"],
  [3, "distributed"],
  [3, "centralized"],
] as const) {
  test(`matmul-tiles example: 64 tiles on ${n} ranks under ${pool}, verified`, async (t) => {
    const args = ["--size", "256", "--tile", "32", "--verify"];
    const r = await run(["-n", String(n), "--timeout", "60", "--pool", pool, MATMUL, ...args]);
    t.is(r.code, 0, r.stderr);
    t.regex(
      r.stdout,
      new RegExp(
        `matmul-tiles: 256x256, 64 tiles of 32x32 on ${n} rank${n === 1 ? "" : "s"}: trace -?\\d+, [\\d.]+ ms`,
      ),
    );
    t.regex(r.stderr, /matmul-tiles: verified: every entry of C equals the sequential product's/);
  });
}

test("matmul-tiles example: a tile that does not divide the size is one line and status 2", async (t) => {
  const r = await run(["-n", "1", MATMUL, "--size", "100", "--tile", "32"]);
  t.is(r.code, 2);
  t.regex(r.stderr, /--tile \(32\) must divide --size \(100\)/);
});
