// Rank program for `npm run bench -- strategies`. Rank 0 prints one JSON line per pool run.
//   strategies-ranks.ts <secondsPerRank> <workload>[,<workload>...] <combo>...
//       Emulated work (timed waits, Pareto alpha 3, mean 20 ms: emulated.ts), `secondsPerRank` of it per rank:
//       `one-source` puts it all on rank 0, `spread` has every rank put its own share. For each combination
//       (a short name, `comboName` in lib/pool/config.ts: "receiver/random/tree", "lifeline/tree") and each
//       workload, one pool run. makespan is rank 0's time in `run`; bound = max(measured waits / ranks,
//       longest wait). A run still going after ten times its work per rank (plus 20 s) is aborted and
//       reported with `error`, and the next one starts.
import { connect, type RunResult } from "workpool";
import { comboFromName } from "workpool/internal";
import { emulatedWorker, putEmulatedWork } from "./emulated.ts";

const [secondsArg = "2", workloadsArg = "one-source,spread", ...specs] = process.argv.slice(2);
const perRankMs = Number(secondsArg) * 1000;
if (!(perRankMs > 0)) throw new Error(`strategies-ranks: seconds per rank must be > 0; got ${secondsArg}`);
const workloads = workloadsArg.split(",");
for (const w of workloads) {
  if (w !== "one-source" && w !== "spread")
    throw new Error(`strategies-ranks: workload must be one-source or spread; got ${JSON.stringify(w)}`);
}
const combos = specs.map((spec) => {
  const c = comboFromName(spec);
  if (!c) throw new Error(`strategies-ranks: unknown combination ${JSON.stringify(spec)}`);
  return [spec, c] as const;
});

const world = await connect();
for (const [name, combo] of combos) {
  for (const workload of workloads) {
    const pool = world.pool<number>({ mode: "distributed", ...combo, concurrency: 1 });
    if (workload === "spread") putEmulatedWork((ms) => pool.put(ms), perRankMs, 11 + 7919 * world.rank);
    else if (world.rank === 0) putEmulatedWork((ms) => pool.put(ms), perRankMs * world.size, 11);
    const { handler, measured } = emulatedWorker();
    const signal = world.rank === 0 ? AbortSignal.timeout(10 * perRankMs + 20_000) : undefined;
    await world.barrier();
    const t0 = performance.now();
    let stats: RunResult | undefined;
    let error: string | undefined;
    try {
      stats = await pool.run(handler, { signal });
    } catch (e) {
      error = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    }
    const makespan = performance.now() - t0;
    const mine = [error === undefined ? 0 : 1, measured.work, stats?.messagesSent ?? 0, stats?.tasksExecuted ?? 0];
    const [failed = 0, totalWork = 0, messages = 0, tasks = 0, moved = 0] = await world.allreduce(
      [...mine, stats?.counters.tasksMovedIn ?? 0],
      "sum",
    );
    const longest = await world.allreduce(measured.longest, "max");
    if (world.rank === 0) {
      const bound = Math.max(totalWork / world.size, longest);
      const line = { combo: name, workload, ranks: world.size, makespan, bound, ratio: makespan / bound };
      const more = failed > 0 ? { error: error ?? `failed on ${failed} rank(s)` } : {};
      console.log(JSON.stringify({ ...line, messages, tasks, moved, ...more }));
    }
  }
}
await world.close();
