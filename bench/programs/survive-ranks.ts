// Rank program for `npm run bench -- faults`: a distributed pool with `retries` through a rank's death, on real
// work: the UTS sample tree T1XS (1,031,269 nodes, every node a task that puts its children; apps/uts).
//
//   survive-ranks.ts <seed> <pool spec>
//       Rank 1 + seed % (size - 1) SIGKILLs itself after a number of its own tasks drawn from the seed (between
//       a twentieth and a half of its share of the nodes), in the middle of a task. Rank 0 prints one JSON line:
//       {"kind":"kill","seed","spec","victim","after","nodes","leaves","depth","expected":{nodes,leaves,depth},
//       "seconds","counters"} once its run resolves (counters: rank 0's pool counters: workersLost,
//       tasksRedealt, ...). A job whose counts differ from `expected` gave a wrong answer.
import { connect } from "workpool";
import { parsePoolSpec } from "workpool/internal";
import { sampleTree } from "../../apps/uts/samples.ts";
import { Tree, type UtsNode } from "../../apps/uts/tree.ts";

const TREE = "T1XS";
const [seedArg = "1", spec = "distributed,retries=1"] = process.argv.slice(2);
const seed = Number(seedArg);
const sample = sampleTree(TREE);
if (!sample) throw new Error(`survive-ranks: no sample tree ${TREE}`);
const tree = new Tree(sample.params);

type Tally = [nodes: number, leaves: number, depth: number];
const combine = (a: Tally, b: Tally): Tally => {
  a[0] += b[0];
  a[1] += b[1];
  if (b[2] > a[2]) a[2] = b[2];
  return a;
};

const world = await connect();
const { rank, size } = world;
const victim = 1 + (seed % (size - 1));
// A share of the tree is nodes / size; the victim dies somewhere between 1/20 and 1/2 of it (a seeded draw).
const share = sample.counts.nodes / size;
const after = Math.floor(share * (0.05 + 0.45 * (((seed * 2654435761) >>> 0) / 2 ** 32)));
const pool = world.pool<UtsNode>(parsePoolSpec(spec));
if (rank === 0) pool.put(tree.root());
let ran = 0;
await world.barrier();
const t0 = performance.now();
const { result, counters } = await pool.run<Tally>(
  (node, ctx) => {
    if (rank === victim && ++ran === after) process.kill(process.pid, "SIGKILL");
    const { s, d } = node;
    const n = tree.numChildren(s, d);
    for (let i = 0; i < n; i++) ctx.put({ s: tree.spawn(s, i), d: d + 1 });
    return [1, n === 0 ? 1 : 0, d];
  },
  { reduce: combine },
);
const seconds = (performance.now() - t0) / 1000;
if (rank === 0) {
  const [nodes, leaves, depth] = result ?? [0, 0, 0];
  const line = { kind: "kill", seed, spec, victim, after, nodes, leaves, depth, expected: sample.counts, seconds };
  console.log(JSON.stringify({ ...line, counters }));
}
await world.close();
