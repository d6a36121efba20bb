// The ranks of `npm run bench -- map` (bench/map.ts). Rank 0 prints one JSON line.
//   small N ROUNDS   world.map over N small items (numbers, each returning an object of two numbers), ROUNDS times
//                    after a barrier each: ms of each round, first included
//   big K MODE       K results of 1 MiB (a Float64Array of 131,072 values made from the item), collected on rank 0,
//                    by world.map (MODE map) or by hand-written send/recv (MODE hand: rank r makes items r, r+size,
//                    ... and sends each to rank 0, which places it by a tag of its index); ms from a barrier to
//                    rank 0 holding all, and rank 0's peak RSS above its RSS before, in bytes
//   wait N CONC      world.map over N items whose handler waits 5 ms (a timer, as for a request), with
//                    concurrency CONC: ms from a barrier to rank 0 holding all
import { connect } from "workpool";

const world = await connect();
const [what = "small", a = "100000", b = "3"] = process.argv.slice(2);
const VALUES = (1024 * 1024) / 8;

/** Item i's 1 MiB result. */
function block(i: number): Float64Array {
  const out = new Float64Array(VALUES);
  for (let k = 0; k < VALUES; k++) out[k] = i + k * 1e-6;
  return out;
}

if (what === "small") {
  const n = Number(a);
  const items = Array.from({ length: n }, (_, i) => i);
  const ms: number[] = [];
  for (let round = 0; round < Number(b); round++) {
    await world.barrier();
    const t0 = performance.now();
    const r = await world.map(items, (x) => ({ x, y: x * 0.5 }));
    if (world.rank === 0 && (r?.length !== n || r[n - 1]?.x !== n - 1)) throw new Error("map: wrong results");
    ms.push(performance.now() - t0);
  }
  if (world.rank === 0) console.log(JSON.stringify({ ms }));
} else if (what === "wait") {
  const n = Number(a);
  await world.barrier();
  const t0 = performance.now();
  const r = await world.map(
    Array.from({ length: n }, (_, i) => i),
    async (i) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return i;
    },
    { concurrency: Number(b) },
  );
  if (world.rank === 0 && r?.[n - 1] !== n - 1) throw new Error("wait: wrong results");
  if (world.rank === 0) console.log(JSON.stringify({ ms: performance.now() - t0 }));
} else {
  const k = Number(a);
  const mode = b;
  global.gc?.();
  const rssBefore = process.memoryUsage.rss();
  await world.barrier();
  const t0 = performance.now();
  let results: Float64Array[] | undefined;
  if (mode === "map") {
    results = await world.map(
      Array.from({ length: k }, (_, i) => i),
      (i) => block(i),
    );
  } else {
    const own: number[] = [];
    for (let i = world.rank; i < k; i += world.size) own.push(i);
    if (world.rank === 0) {
      results = new Array<Float64Array>(k);
      for (const i of own) results[i] = block(i);
      for (let got = own.length; got < k; got++) {
        const m = await world.recv<Float64Array>();
        results[m.tag] = m.data;
      }
    } else for (const i of own) await world.send(0, i, block(i));
  }
  const ms = performance.now() - t0;
  if (world.rank === 0) {
    const ok = results?.length === k && results.every((r, i) => r.length === VALUES && r[0] === i);
    if (!ok) throw new Error(`${mode}: wrong results`);
    const peak = process.resourceUsage().maxRSS * 1024;
    console.log(JSON.stringify({ ms, bytes: k * VALUES * 8, rssBefore, peak, grew: peak - rssBefore }));
  }
}
await world.close();
