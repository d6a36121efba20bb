// The start-up benchmark's idle rank (bench/startup.ts): connect, wait for every rank, then report the resident
// memory of this rank's process and of the processes it started (a TypeScript loader's compiler, say), in bytes.
import { readdirSync, readFileSync } from "node:fs";
import { connect } from "workpool";

/** RSS of `pid` and its descendants, from /proc (Linux); this process's own RSS elsewhere. */
function treeRss(pid) {
  let parents;
  try {
    parents = new Map();
    for (const name of readdirSync("/proc")) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, "utf8");
        const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
        parents.set(Number(name), ppid);
      } catch {
        /* gone */
      }
    }
  } catch {
    return process.memoryUsage().rss;
  }
  const inTree = new Set([pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [child, parent] of parents) {
      if (inTree.has(parent) && !inTree.has(child)) {
        inTree.add(child);
        grew = true;
      }
    }
  }
  let total = 0;
  for (const p of inTree) {
    try {
      const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, "utf8"));
      if (kb) total += Number(kb[1]) * 1024;
    } catch {
      /* gone */
    }
  }
  return total;
}

const world = await connect();
await world.barrier();
const all = await world.gather(treeRss(process.pid), 0);
await world.barrier();
if (world.rank === 0) console.log(JSON.stringify({ rss: all }));
await world.close();
