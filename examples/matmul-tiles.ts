/**
 * A matrix product by tiles with `world.map`: the example of results per item (issue 29).
 *
 *   workpool launch -n 4 [--pool ...] examples/matmul-tiles.ts [--size N] [--tile B] [--verify]
 *
 * C = A B for N x N matrices (default 1024), cut into tiles of B x B (default 128: 64 tiles). Every rank makes A
 * and B (generated from their indices, so every rank has the same ones) and the list of tiles; `world.map` runs
 * each tile somewhere, its handler returning the tile's block of C as a Float64Array of B x B values, and gives
 * rank 0 every block in tile order, each sent straight from the rank that made it. Rank 0 assembles C and prints
 * its trace and time; `--verify` checks every entry against a sequential product.
 */
import { connect } from "workpool";

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  if (i < 0) return fallback;
  const value = Number(process.argv[i + 1]);
  if (!Number.isInteger(value) || value < 1) {
    console.error(`matmul-tiles: ${name} must be a positive integer; got ${process.argv[i + 1] ?? "nothing"}`);
    process.exit(2);
  }
  return value;
}

const n = arg("--size", 1024);
const b = arg("--tile", 128);
if (n % b !== 0) {
  console.error(`matmul-tiles: --tile (${b}) must divide --size (${n})`);
  process.exit(2);
}
const verify = process.argv.includes("--verify");
const per = n / b;

// Row-major matrices; B is also kept transposed, so a tile's inner loop reads both operands in order.
const a = new Float64Array(n * n);
const bt = new Float64Array(n * n);
for (let i = 0; i < n; i++) {
  for (let j = 0; j < n; j++) {
    a[i * n + j] = ((i * 7 + j * 3) % 11) - 5;
    bt[j * n + i] = ((i * 5 + j * 13) % 7) - 3; // B[i][j]
  }
}

/** Tile t of C: rows (t / per) x b .. + b, columns (t % per) x b .. + b, row-major. */
function tile(t: number): Float64Array {
  const r0 = Math.floor(t / per) * b;
  const c0 = (t % per) * b;
  const out = new Float64Array(b * b);
  for (let i = 0; i < b; i++) {
    const ai = (r0 + i) * n;
    for (let j = 0; j < b; j++) {
      const bj = (c0 + j) * n;
      let s = 0;
      for (let k = 0; k < n; k++) s += (a[ai + k] as number) * (bt[bj + k] as number);
      out[i * b + j] = s;
    }
  }
  return out;
}

const world = await connect();
const tiles = Array.from({ length: per * per }, (_, t) => t);
const t0 = performance.now();
const blocks = await world.map(tiles, tile);
const ms = performance.now() - t0;
if (blocks) {
  const c = new Float64Array(n * n);
  for (const [t, block] of blocks.entries()) {
    const r0 = Math.floor(t / per) * b;
    const c0 = (t % per) * b;
    for (let i = 0; i < b; i++) c.set(block.subarray(i * b, (i + 1) * b), (r0 + i) * n + c0);
  }
  let trace = 0;
  for (let i = 0; i < n; i++) trace += c[i * n + i] as number;
  console.log(
    `matmul-tiles: ${n}x${n}, ${tiles.length} tiles of ${b}x${b} on ${world.size} rank${world.size === 1 ? "" : "s"}: trace ${trace}, ${ms.toFixed(1)} ms`,
  );
  if (verify) {
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let k = 0; k < n; k++) s += (a[i * n + k] as number) * (bt[j * n + k] as number);
        if (s !== c[i * n + j]) {
          console.error(`matmul-tiles: C[${i}][${j}] is ${c[i * n + j]}, the sequential product ${s}`);
          process.exit(1);
        }
      }
    }
    console.error(`matmul-tiles: verified: every entry of C equals the sequential product's`);
  }
}
await world.close();
