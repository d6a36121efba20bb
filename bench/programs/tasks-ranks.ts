// The ranks of `npm run bench -- tasks` (bench/tasks.ts). `stop`: rank 0 puts 30 tasks of 3 s that honour
// ctx.signal (a timer given the signal); task 0, wherever it runs, calls ctx.stop after 1 s instead. (It was the
// last rank's first task: under load, a working coordinator and one worker with 16 tasks in flight each could
// take all 30 before the last rank asked, and no task stopped the run.) Every rank prints one JSON line: when its
// run settled and, on the stopping rank, when the stop was called (epoch ms, one clock).
// `hash DIR CONCURRENCY WAIT_MS`: rank 0 puts one task per file of DIR (CONCURRENCY 0: the pool's default); each reads its file and hashes it, after
// waiting WAIT_MS (0: none; else as for a remote store); rank 0 prints the run's wall time and the xor of the
// hashes' first words.
import { createHash } from "node:crypto";
import { readdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { connect } from "workpool";

const world = await connect();
const what = process.argv[2];
if (what === "stop") {
  const pool = world.pool<number>();
  if (world.rank === 0) for (let i = 0; i < 30; i++) pool.put(i);
  let started = 0;
  let stopAt = 0;
  const r = await pool.run(async (id, ctx) => {
    started++;
    if (id === 0) {
      await sleep(1000);
      stopAt = Date.now();
      ctx.stop(1);
      return;
    }
    await sleep(3000, undefined, { signal: ctx.signal }).catch(() => {});
  });
  const settledAt = Date.now();
  console.log(JSON.stringify({ rank: world.rank, stopped: r.stopped, started, stopAt, settledAt }));
} else if (what === "hash") {
  const dir = process.argv[3] as string;
  const concurrency = Number(process.argv[4]);
  const waitMs = Number(process.argv[5] ?? 0);
  const pool = world.pool<string>(Number.isInteger(concurrency) && concurrency > 0 ? { concurrency } : {});
  if (world.rank === 0) for (const f of readdirSync(dir)) pool.put(join(dir, f));
  const cpu0 = process.cpuUsage();
  const r = await pool.run(
    async (file) => {
      if (waitMs > 0) await sleep(waitMs);
      const bytes = await readFile(file);
      return createHash("sha256").update(bytes).digest().readUInt32LE(0);
    },
    { reduce: (a, b) => (a ^ b) >>> 0 },
  );
  // The CPU every rank used in its run, every thread of it (libuv's reads, V8's compiler and GC).
  const cpu = process.cpuUsage(cpu0);
  const cpus = await world.gather((cpu.user + cpu.system) / 1000, 0);
  if (world.rank === 0) {
    const cpuMs = (cpus as number[]).reduce((a, b) => a + b, 0);
    console.log(JSON.stringify({ ms: r.wallMs, xor: r.result, concurrency: pool.config.concurrency, cpuMs }));
  }
} else throw new Error(`tasks-ranks.ts: unknown workload ${what}`);
await world.close();
