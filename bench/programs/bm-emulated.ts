// Block matching's shape with emulated work, for `npm run bench -- apps` at many ranks on a small machine:
// `pairs` frame pairs of `strips` strips each, all put on rank 0 (with the pair as locality key, or without),
// each strip a timed wait drawn from bench/programs/emulated.ts's distribution (mean 20 ms), each frame a
// timed wait of `loadMs` the first time a rank needs it, held in the app's bounded FrameCache of `cache`
// frames (apps/block-matching/source.ts). Rank 0 prints one JSON line: seconds, frames loaded per rank, work.
//   bm-emulated.ts <pairs> <strips> <loadMs> <cache> <keys: on|off> <seed>
import { connect } from "workpool";
import { Random } from "../../apps/common/random.ts";
import { FrameCache } from "../../apps/block-matching/source.ts";
import { drawEmulatedMs } from "./emulated.ts";

interface EmulatedStrip {
  /** Frame pair k: frames k - 1 and k. */
  readonly k: number;
  readonly ms: number;
}

const [pairs, strips, loadMs, cacheFrames, keysArg, seed] = process.argv.slice(2);
if (seed === undefined || (keysArg !== "on" && keysArg !== "off")) {
  throw new Error("usage: bm-emulated.ts <pairs> <strips> <loadMs> <cache> <keys: on|off> <seed>");
}
const keys = keysArg === "on";
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const world = await connect();
// One strip at a time: a timed wait stands for a CPU-bound strip, which a rank runs alone.
const pool = world.pool<EmulatedStrip>({ concurrency: 1 });
let work = 0;
if (world.rank === 0) {
  const random = new Random(Number(seed));
  for (let k = 1; k <= Number(pairs); k++) {
    for (let row = 0; row < Number(strips); row++) {
      const ms = drawEmulatedMs(random);
      work += ms;
      pool.put({ k, ms }, keys ? { key: k } : undefined);
    }
  }
}
const cache = new FrameCache<Promise<void>>(() => sleep(Number(loadMs)), Number(cacheFrames));
await world.barrier();
const t0 = performance.now();
await pool.run(async (strip) => {
  await cache.get(strip.k - 1);
  await cache.get(strip.k);
  await sleep(strip.ms);
});
const seconds = (performance.now() - t0) / 1000;
const loads = await world.gather(cache.loads, 0);
if (world.rank === 0) {
  console.log(JSON.stringify({ seconds, framesLoaded: loads, workSeconds: work / 1000, ranks: world.size }));
}
await world.close();
