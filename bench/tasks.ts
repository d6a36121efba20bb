/**
 * `npm run bench -- tasks`: tasks as Node.js developers write them (issue 29). Stop latency: 3 ranks run tasks
 * of 3 s that honour `ctx.signal`; one task calls `ctx.stop` after 1 s; target: `run` settles on every rank
 * within 50 ms of the stop, in both modes (the slowest rank of three runs each). I/O tasks: read and hash 200
 * generated files of 256 KB on 2 ranks, with `concurrency` 1 and the default, against one process running a
 * plain loop that keeps 8 reads in flight; then the same with a 2 ms wait before each read, as for a remote store (the best of five runs each; the files are in the page cache after the
 * first). Printed: the ratio of each to the plain loop's time (below 1: faster).
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { join } from "node:path";
import { DEFAULT_CONCURRENCY } from "../lib/pool/config.ts";
import { fmt, formatTable, runJsonLines, scorecard, type Suite, WORKPOOL_BIN } from "./harness.ts";

const PROGRAM = new URL("./programs/tasks-ranks.ts", import.meta.url).pathname;
const STOP_TARGET_MS = 50;
const POOLS = ["centralized", "centralized,coordinatorWorks=true", "distributed"] as const;

interface StopLine {
  readonly rank: number;
  readonly stopped: boolean;
  readonly stopAt: number;
  readonly settledAt: number;
}

/** Ms from the stop to the last rank's `run` settling, in one job of `pool`. */
async function stopLatency(pool: string): Promise<number> {
  const args = ["launch", "-n", "3", "--no-prefix", "--quiet", "--timeout", "60", "--pool", pool];
  const lines = (await runJsonLines(process.execPath, [WORKPOOL_BIN, ...args, PROGRAM, "stop"], {
    timeoutMs: 90_000,
  })) as StopLine[];
  if (lines.length !== 3 || lines.some((l) => !l.stopped)) {
    throw new Error(`tasks-ranks.ts stop under ${pool}: ${JSON.stringify(lines)}`);
  }
  const stopAt = Math.max(...lines.map((l) => l.stopAt));
  return Math.max(...lines.map((l) => l.settledAt)) - stopAt;
}

const FILES = 200;
const FILE_BYTES = 256 * 1024;
/** Reads the plain loop keeps in flight. */
const PLAIN_IN_FLIGHT = 8;
/** Waits before each read: none (the page cache), and 2 ms, as for a remote store. */
const WAITS_MS = [0, 2] as const;

/** The plain loop: PLAIN_IN_FLIGHT readers over the files, each reading and hashing one at a time. */
async function plainHash(dir: string, waitMs: number): Promise<{ ms: number; xor: number }> {
  const files = readdirSync(dir).map((f) => join(dir, f));
  let next = 0;
  let xor = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: PLAIN_IN_FLIGHT }, async () => {
      while (next < files.length) {
        const file = files[next++] as string;
        // Read before xor is: `xor ^ (await ...)` would take xor's value from before the await.
        if (waitMs > 0) await sleep(waitMs);
        const bytes = await readFile(file);
        xor = (xor ^ createHash("sha256").update(bytes).digest().readUInt32LE(0)) >>> 0;
      }
    }),
  );
  return { ms: performance.now() - t0, xor };
}

async function poolHash(dir: string, concurrency: number, waitMs: number): Promise<{ ms: number; xor: number }> {
  const args = ["launch", "-n", "2", "--no-prefix", "--quiet", "--timeout", "60", "--pool", "distributed"];
  const lines = (await runJsonLines(
    process.execPath,
    [WORKPOOL_BIN, ...args, PROGRAM, "hash", dir, String(concurrency), String(waitMs)],
    { timeoutMs: 90_000 },
  )) as { ms: number; xor: number }[];
  const line = lines[0];
  if (!line) throw new Error(`tasks-ranks.ts hash: no result line`);
  return line;
}

async function best(runs: number, f: () => Promise<{ ms: number; xor: number }>, xor: number): Promise<number> {
  let ms = Number.POSITIVE_INFINITY;
  for (let i = 0; i < runs; i++) {
    const r = await f();
    if (r.xor !== xor) throw new Error(`hash xor ${r.xor}, expected ${xor}`);
    ms = Math.min(ms, r.ms);
  }
  return ms;
}

async function ioTasks(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "workpool-bench-hash-"));
  try {
    for (let i = 0; i < FILES; i++) writeFileSync(join(dir, `f${i}`), randomBytes(FILE_BYTES));
    const first = await plainHash(dir, 0);
    const rows: string[][] = [["read + hash 200 files of 256 KB", "ms (best of 5)", "vs plain loop"]];
    for (const waitMs of WAITS_MS) {
      const plain = await best(5, () => plainHash(dir, waitMs), first.xor);
      const what = waitMs > 0 ? `, each after a ${waitMs} ms wait` : "";
      rows.push([`plain loop, ${PLAIN_IN_FLIGHT} reads in flight, 1 process${what}`, fmt(plain), "1.00x"]);
      for (const c of [1, DEFAULT_CONCURRENCY]) {
        const ms = await best(5, () => poolHash(dir, c, waitMs), first.xor);
        const label = `-n 2 distributed, concurrency ${c}${c === DEFAULT_CONCURRENCY ? " (default)" : ""}${what}`;
        rows.push([label, fmt(ms), `${(ms / plain).toFixed(2)}x`]);
      }
    }
    process.stdout.write(`\n${formatTable(rows)}\n\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const suite: Suite = {
  name: "tasks",
  description: "tasks as Node.js developers write them: stop latency with ctx.signal; I/O tasks with concurrency",
  async run() {
    const score = scorecard();
    const rows: string[][] = [["stop latency, -n 3, tasks of 3 s", "ms (3 runs)", "worst", "target", ""]];
    for (const pool of POOLS) {
      const ms: number[] = [];
      for (let i = 0; i < 3; i++) ms.push(await stopLatency(pool));
      const worst = Math.max(...ms);
      rows.push([
        pool,
        ms.map(fmt).join(" "),
        fmt(worst),
        `<= ${STOP_TARGET_MS}`,
        score.verdict(worst <= STOP_TARGET_MS),
      ]);
    }
    process.stdout.write(`\n${formatTable(rows)}\n\n`);
    await ioTasks();
    return score.report();
  },
};
