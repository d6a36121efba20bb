// The ranks of `npm run bench -- tasks` (bench/tasks.ts). `stop`: rank 0 puts 30 tasks of 3 s that honour
// ctx.signal (a timer given the signal); the last rank's first task calls ctx.stop after 1 s. Every rank prints
// one JSON line: when its run settled and, on the stopping rank, when the stop was called (epoch ms, one clock).
import { setTimeout as sleep } from "node:timers/promises";
import { connect } from "workpool";

const world = await connect();
const what = process.argv[2];
if (what === "stop") {
  const pool = world.pool<number>();
  const stopper = world.size - 1;
  if (world.rank === 0) for (let i = 0; i < 30; i++) pool.put(i);
  let started = 0;
  let stopAt = 0;
  const r = await pool.run(async (_id, ctx) => {
    started++;
    if (world.rank === stopper && started === 1) {
      await sleep(1000);
      stopAt = Date.now();
      ctx.stop(1);
      return;
    }
    await sleep(3000, undefined, { signal: ctx.signal }).catch(() => {});
  });
  const settledAt = Date.now();
  console.log(JSON.stringify({ rank: world.rank, stopped: r.stopped, started, stopAt, settledAt }));
} else throw new Error(`tasks-ranks.ts: unknown workload ${what}`);
await world.close();
