// Piscina reference: no-op tasks on 2 worker threads (one machine), as many in flight as it takes.
import { Piscina } from "piscina";

const n = Number(process.argv[2] ?? 200_000);
const pool = new Piscina({
  filename: new URL("./piscina-noop.mjs", import.meta.url).href,
  minThreads: 2,
  maxThreads: 2,
});
await Promise.all([pool.run(0), pool.run(0)]);
const t0 = performance.now();
const window = 1024;
let next = 0;
const lane = async () => {
  while (next < n) {
    next++;
    await pool.run(next);
  }
};
await Promise.all(Array.from({ length: window }, lane));
const seconds = (performance.now() - t0) / 1000;
console.log(JSON.stringify({ kind: "piscina", tasks: n, seconds, rate: n / seconds }));
await pool.destroy();
