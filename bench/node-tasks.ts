/**
 * `npm run bench -- node-tasks`: issue 29's targets in one run, tasks as Node.js developers write them. It runs
 * three suites that can also run alone: `tasks` (stop latency with `ctx.signal`; async I/O tasks against a plain
 * loop with 8 reads in flight), `longtasks` (coarse, uneven synchronous tasks put on one rank) and `map`
 * (per-item results: small items' rate, 1 MiB results against hand-written send/recv). Their targets add up.
 */
import type { Suite } from "./harness.ts";
import { suite as longtasks } from "./longtasks.ts";
import { suite as map } from "./map.ts";
import { suite as tasks } from "./tasks.ts";

const PARTS: readonly Suite[] = [tasks, longtasks, map];

export const suite: Suite = {
  name: "node-tasks",
  description: `issue 29's targets: the suites ${PARTS.map((s) => s.name).join(", ")} in one run`,
  async run() {
    let targets = 0;
    let misses = 0;
    for (const part of PARTS) {
      process.stdout.write(`\n-- ${part.name}: ${part.description}\n`);
      const report = await part.run([]);
      targets += report.targets;
      misses += report.misses;
    }
    return { targets, misses };
  },
};
