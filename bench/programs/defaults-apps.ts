/**
 * The apps of `npm run bench -- defaults`, each on `world.pool()` with no options (so the launcher's `--pool`
 * spec, or the default pool when none is given, decides), timed on rank 0 from a barrier to the end of the run:
 *
 *   defaults-apps.ts KIND [ARG]    KIND: tree, coarse, io (ARG: the folder of files), loop
 *
 * - tree: a binary task tree of depth 19 (1M nodes), each node ~1 us of arithmetic: fine-grained tasks that
 *   create tasks (UTS-like);
 * - coarse: 40 synchronous tasks of 20-300 ms of real arithmetic (seeded), all put on rank 0;
 * - io: read and hash (SHA-256) every file of ARG, one async task a file, all put on rank 0;
 * - loop: `parallelFor` over 4M iterations of ~40 ns whose cost varies 10x across the range.
 *
 * (Branch and bound is examples/knapsack.ts itself, run by the suite.) Prints one JSON line on rank 0: `{"kind","mode","seconds","check"}`; `check` is the same whatever the pool
 * (a count, a sum, an optimum), so a wrong answer shows.
 */
import { createHash } from "node:crypto";
import { readdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { connect } from "workpool";

const kind = process.argv[2];
const world = await connect();

/** ~`n` iterations of arithmetic the JIT cannot drop. */
function spin(n: number, seed: number): number {
  let x = seed | 1;
  for (let i = 0; i < n; i++) x = (x * 1103515245 + 12345) & 0x7fffffff;
  return x & 1;
}

async function tree(): Promise<number> {
  const pool = world.pool<number>();
  if (world.rank === 0) pool.put(0);
  const { result } = await pool.run((depth, ctx) => {
    spin(120, depth);
    if (depth < 19) {
      ctx.put(depth + 1);
      ctx.put(depth + 1);
    }
    return 1;
  });
  return result ?? 0;
}

async function coarse(): Promise<number> {
  const pool = world.pool<number>();
  if (world.rank === 0) {
    let state = 11;
    for (let i = 0; i < 40; i++) {
      state = (state * 1103515245 + 12345) % 2147483648;
      pool.put(20 + Math.floor((state / 2147483648) * 280));
    }
  }
  // ~ms of arithmetic: calibrated per rank below (the same work on every rank and under every pool).
  const { result } = await pool.run((ms) => spin(ms * ITERATIONS_PER_MS, ms) + 1);
  return result ?? 0;
}

async function io(dir: string): Promise<number> {
  const files = readdirSync(dir).sort();
  const pool = world.pool<string>();
  if (world.rank === 0) for (const f of files) pool.put(f);
  const { result } = await pool.run(async (f) => {
    const data = await readFile(join(dir, f));
    return createHash("sha256").update(data).digest().readUInt16BE(0);
  });
  return result ?? 0;
}

async function loop(): Promise<number> {
  const n = 4_000_000;
  const { result } = await world.parallelFor(0, n, (i) => spin((4 + (i * 36) / n) | 0, i));
  return result ?? 0;
}

/** Iterations of `spin` per millisecond on this machine, measured once (the same figure for every pool). */
const ITERATIONS_PER_MS = 40_000;

await world.barrier();
const t0 = performance.now();
const check =
  kind === "tree"
    ? await tree()
    : kind === "coarse"
      ? await coarse()
      : kind === "io"
        ? await io(process.argv[3] as string)
        : kind === "loop"
          ? await loop()
          : Number.NaN;
if (Number.isNaN(check)) throw new Error(`defaults-apps: unknown kind ${JSON.stringify(kind)}`);
const seconds = (performance.now() - t0) / 1000;
if (world.rank === 0) console.log(JSON.stringify({ kind, mode: world.pool().config.mode, seconds, check }));
await world.close();
