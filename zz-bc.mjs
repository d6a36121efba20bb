import { connect } from "./dist/lib/index.js";
const world = await connect();
const res = [];
for (let k = 0; k < 9; k++) {
  await world.barrier();
  await new Promise((r) => setTimeout(r, 50));
  if (world.rank === 0) {
    const t = performance.timeOrigin + performance.now();
    for (let r = 1; r < world.size; r++) void world.send(r, 9, t);
    res.push([0, 0]);
  } else {
    const c0 = process.cpuUsage();
    const m = await world.recv({ source: 0, tag: 9 });
    const got = performance.timeOrigin + performance.now();
    const c1 = process.cpuUsage(c0);
    res.push([got - m.data, (c1.user + c1.system) / 1000]);
  }
}
const all = await world.gather(res, 0);
if (all) {
  const lat = [], cpu = [];
  for (let k = 0; k < 9; k++) { lat.push(Math.max(...all.slice(1).map((a) => a[k][0]))); cpu.push(all.slice(1).reduce((s, a) => s + a[k][1], 0) / (all.length - 1)); }
  const med = (x) => [...x].sort((a, b) => a - b)[x.length >> 1];
  console.log("size", world.size, "broadcast median ms", med(lat).toFixed(2), "cpu per receiver ms", med(cpu).toFixed(3));
}
await world.close();
