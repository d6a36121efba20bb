// Rank program for the distributed part of `npm run bench -- pool`. Rank 0 prints one JSON line per result.
//   distributed-ranks.ts throughput <depth> <fan>   every rank grows and consumes its own no-op task tree
//   distributed-ranks.ts emulate <secondsPerRank> <combo>...   emulated work (timed waits, Pareto alpha 3,
//       mean 20 ms) all put on rank 0; for each combination (its short name, comboName in lib/pool/config.ts:
//       "receiver/random/tree", "lifeline/tree") one pool run
//   distributed-ranks.ts latency <reps> <termination>   termination latency of small no-op runs
//   distributed-ranks.ts ending <reps> <secondsPerRank> <combo>   termination latency after emulated work
//       (timed waits) spread over every rank: per run, from the last task's end anywhere to the root's
//       detection and to the last rank returning from `run`, with the detector's message rounds. Every other
//       run, the ranks report (a gather to rank 0) as soon as they return, as the figure was first taken; in the
//       others, after a quiet spell (QUIET_MS a rank), so that no report of a rank that returned early slows the
//       DONE still on its way to the others: on 2 cores, 16 ranks ended in 4.6-5.1 ms reporting at once and in
//       2.1-2.5 ms quiet. The quiet runs are the figure; both are printed.
import { emulatedWorker, putEmulatedWork } from "./emulated.ts";
import { connect, type PoolOptions } from "workpool";
import { comboFromName } from "workpool/internal";

const [mode = "throughput", ...rest] = process.argv.slice(2);
const world = await connect();
const epochNow = () => performance.timeOrigin + performance.now();

function combo(spec: string): PoolOptions {
  const c = comboFromName(spec);
  if (!c) throw new Error(`distributed-ranks: unknown combination ${JSON.stringify(spec)}`);
  return { mode: "distributed", ...c };
}

/** Every rank's counters summed, and the spread between the last task and the last rank to return. */
async function summary(stats: { counters: Record<string, number>; messagesSent: number; lastTaskAt: number }) {
  const returned = epochNow();
  const lastTask = await world.allreduce(stats.lastTaskAt, "max");
  const lastReturn = await world.allreduce(returned, "max");
  const moved = await world.allreduce(stats.counters.tasksMovedIn ?? 0, "sum");
  const messages = await world.allreduce(stats.messagesSent, "sum");
  return { latencyMs: lastReturn - lastTask, moved, messages };
}

if (mode === "throughput") {
  const depth = Number(rest[0] ?? 9);
  const fan = Number(rest[1] ?? 4);
  const pool = world.pool<number>({ mode: "distributed", concurrency: 1 });
  pool.put(0);
  await world.barrier();
  const t0 = performance.now();
  const stats = await pool.run((d, ctx) => {
    if (d < depth) for (let i = 0; i < fan; i++) ctx.put(d + 1);
  });
  const seconds = (performance.now() - t0) / 1000;
  const tasks = await world.allreduce(stats.tasksExecuted, "sum");
  const moved = await world.allreduce(stats.counters.tasksMovedIn ?? 0, "sum");
  if (world.rank === 0) {
    console.log(
      JSON.stringify({
        kind: "throughput",
        ranks: world.size,
        tasks,
        seconds,
        perRank: tasks / seconds / world.size,
        moved,
      }),
    );
  }
} else if (mode === "emulate") {
  const perRank = Number(rest[0] ?? 3);
  for (const spec of rest.slice(1)) {
    const pool = world.pool<number>({ ...combo(spec), concurrency: 1 });
    if (world.rank === 0) putEmulatedWork((ms) => pool.put(ms), perRank * 1000 * world.size, 11);
    const { handler, measured } = emulatedWorker();
    await world.barrier();
    const t0 = performance.now();
    const stats = await pool.run(handler);
    const makespan = performance.now() - t0;
    const s = await summary(stats);
    const totalWork = await world.allreduce(measured.work, "sum");
    const maxTask = await world.allreduce(measured.longest, "max");
    if (world.rank === 0) {
      const bound = Math.max(totalWork / world.size, maxTask);
      console.log(
        JSON.stringify({
          kind: "emulate",
          ranks: world.size,
          combo: spec,
          makespan,
          bound,
          ratio: makespan / bound,
          ...s,
        }),
      );
    }
  }
} else if (mode === "ending") {
  const reps = Number(rest[0] ?? 9);
  const perRank = Number(rest[1] ?? 0.2);
  const spec = rest[2] ?? "receiver/random/tree";
  const pool = world.pool<number>({ ...combo(spec), concurrency: 1 });
  /** A quiet spell long enough for every rank to have returned: the ranks return within 30-110 ms at 64. */
  const QUIET_MS = 4;
  const ends: number[] = [];
  const endsAtOnce: number[] = [];
  const detects: number[] = [];
  const rounds: number[] = [];
  const messages: number[] = [];
  for (let k = 0; k < reps; k++) {
    putEmulatedWork((ms) => pool.put(ms), perRank * 1000, 11 + 7919 * world.rank + 104_729 * k);
    const { handler } = emulatedWorker();
    await world.barrier();
    const stats = await pool.run(handler);
    const returned = epochNow();
    const quiet = k % 2 === 0;
    if (quiet) await new Promise((resolve) => setTimeout(resolve, Math.max(50, QUIET_MS * world.size)));
    const c = stats.counters;
    // Detector rounds: token rounds the root started, or acknowledgements sent (tree): summed on rank 0.
    const mine = [
      returned,
      stats.lastTaskAt,
      c.terminationLatencyMs ?? 0,
      (c.tokenRounds ?? 0) + (c.acksSent ?? 0),
      stats.messagesSent,
      stats.tasksExecuted,
    ];
    const all = await world.gather(mine, 0);
    if (all) {
      const lastTask = Math.max(...all.map((a) => a[1] as number));
      (quiet ? ends : endsAtOnce).push(Math.max(...all.map((a) => a[0] as number)) - lastTask);
      detects.push((all[0] as number[])[2] as number);
      rounds.push(all.reduce((sum, a) => sum + (a[3] as number), 0));
      messages.push(
        all.reduce((sum, a) => sum + (a[4] as number), 0) / all.reduce((sum, a) => sum + (a[5] as number), 0),
      );
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  if (world.rank === 0) {
    console.log(
      JSON.stringify({
        kind: "ending",
        ranks: world.size,
        combo: spec,
        endMedianMs: median(ends),
        endAtOnceMedianMs: median(endsAtOnce),
        detectMedianMs: median(detects),
        detectorMessagesMedian: median(rounds),
        messagesPerTaskMedian: median(messages),
        ends: [...ends].sort((a, b) => a - b),
      }),
    );
  }
} else {
  const reps = Number(rest[0] ?? 15);
  const termination = rest[1] ?? "token-ring";
  const latencies: number[] = [];
  const detections: number[] = [];
  const lateEntries: number[] = [];
  const broadcasts: number[] = [];
  const pool = world.pool<number>({ mode: "distributed", termination, concurrency: 1 } as PoolOptions);
  for (let k = 0; k < reps; k++) {
    if (world.rank === 0) for (let i = 0; i < 2000; i++) pool.put(i);
    await world.barrier();
    const entered = epochNow();
    const stats = await pool.run(() => {});
    const returned = epochNow();
    // One gather to rank 0, not allreduces: ranks that returned early must not wake the others (and slow the
    // ranks still taking DONE) with collective traffic while the measurement is still open.
    const mine = [returned, stats.lastTaskAt, stats.counters.terminationLatencyMs ?? 0, entered];
    const all = await world.gather(mine, 0);
    if (all) {
      const lastTask = Math.max(...all.map((a) => a[1] as number));
      latencies.push(Math.max(...all.map((a) => a[0] as number)) - lastTask);
      // On the root, terminationLatencyMs is the time from the last task to its proof of termination.
      detections.push((all[0] as number[])[2] as number);
      // The last rank to enter the run, after the last task ended (2,000 no-op tasks take about 2 ms; on 2 cores
      // 16 processes leave a barrier over several): that much of the latency is no termination's.
      lateEntries.push(Math.max(...all.map((a) => a[3] as number)) - lastTask);
    }
  }
  // The floor under DONE: the same ranks' messaging, rank 0 sending one message to every other rank just after a
  // barrier, until the last has it.
  for (let k = 0; k < reps; k++) {
    await world.barrier();
    let sentAt = 0;
    let got: number;
    if (world.rank === 0) {
      sentAt = epochNow();
      for (let r = 1; r < world.size; r++) void world.send(r, 9, sentAt);
      got = sentAt;
    } else {
      await world.recv({ source: 0, tag: 9 });
      got = epochNow();
    }
    const all = await world.gather([sentAt, got], 0);
    if (all) broadcasts.push(Math.max(...all.map((a) => a[1] as number)) - ((all[0] as number[])[0] as number));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  if (world.rank === 0) {
    console.log(
      JSON.stringify({
        kind: "latency",
        ranks: world.size,
        termination,
        medianMs: median(latencies),
        detectMedianMs: median(detections),
        lateEntryMedianMs: median(lateEntries),
        broadcastMedianMs: median(broadcasts),
        all: [...latencies].sort((a, b) => a - b),
      }),
    );
  }
}
await world.close();
