/**
 * 0/1 knapsack by branch and bound on a workpool: the example of a shared bound and of results.
 *
 *   workpool launch -n 4 [--pool ...] examples/knapsack.ts [--items N] [--seed S] [--verify]
 *
 * A task is a node of the search tree: the items decided so far (taken or not, in order of value per weight),
 * with their weight and value. Its handler prunes the node if even the fractional relaxation of the rest
 * cannot beat the best value found anywhere (`best.value`, a shared bound every rank reads for free), offers
 * complete solutions to the bound (`best.improve`), and puts its two children, "take the next item" last so it
 * runs first (the pool runs a rank's own tasks newest first: a greedy dive, then backtracking). Each handler
 * returns 1, so `run`'s result counts the nodes explored. The instance is generated (strongly correlated
 * weights and values, the hard kind); `--verify` checks the optimum against dynamic programming.
 */
import { connect } from "workpool";

interface Node {
  /** Next item to decide, weight and value so far. */
  readonly i: number;
  readonly w: number;
  readonly v: number;
}

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  if (i < 0) return fallback;
  const value = Number(process.argv[i + 1]);
  if (!Number.isInteger(value) || value < 1) {
    console.error(`knapsack: ${name} must be a positive integer; got ${process.argv[i + 1] ?? "nothing"}`);
    process.exit(2);
  }
  return value;
}

const n = arg("--items", 36);
const seed = arg("--seed", 7);

// The instance: weights 1..10000 from a small LCG, value = weight + 10 (strongly correlated); capacity half
// the total weight. Items sorted by value per weight, best first, for the bound.
let state = seed;
const random = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
const items = Array.from({ length: n }, () => {
  const w = 1 + Math.floor(random() * 10000);
  return { w, v: w + 10 };
}).sort((a, b) => b.v / b.w - a.v / a.w);
const weights = Int32Array.from(items, (x) => x.w);
const values = Int32Array.from(items, (x) => x.v);
const capacity = Math.floor(weights.reduce((a, b) => a + b, 0) / 2);

/** The fractional relaxation: value reachable from `node` if the next item that does not fit could be split. */
function upperBound(node: Node): number {
  let { w, v } = node;
  for (let i = node.i; i < n; i++) {
    const wi = weights[i] as number;
    if (w + wi <= capacity) {
      w += wi;
      v += values[i] as number;
    } else return v + ((capacity - w) * (values[i] as number)) / wi;
  }
  return v;
}

/** The optimum by dynamic programming over capacities, for --verify. */
function dynamicProgramming(): number {
  const best = new Float64Array(capacity + 1);
  for (let i = 0; i < n; i++) {
    const wi = weights[i] as number;
    const vi = values[i] as number;
    for (let c = capacity; c >= wi; c--) best[c] = Math.max(best[c] as number, (best[c - wi] as number) + vi);
  }
  return best[capacity] as number;
}

const world = await connect();
const pool = world.pool<Node>();
const best = pool.bound("max", 0);
if (world.rank === 0) pool.put({ i: 0, w: 0, v: 0 });
await world.barrier();
const t0 = performance.now();
const { result: explored } = await pool.run((node, ctx) => {
  if (upperBound(node) <= best.value) return 1;
  best.improve(node.v);
  if (node.i === n) return 1;
  const wi = weights[node.i] as number;
  ctx.put({ i: node.i + 1, w: node.w, v: node.v });
  if (node.w + wi <= capacity) ctx.put({ i: node.i + 1, w: node.w + wi, v: node.v + (values[node.i] as number) });
  return 1;
});
const seconds = (performance.now() - t0) / 1000;
// The best over the ranks: an improvement sent just before the run ended may still be on its way elsewhere.
const agreed = await world.allreduce(best.value, "max");
if (world.rank === 0) {
  console.log(
    `knapsack: ${n} items, capacity ${capacity}: best value ${agreed}, ${explored} nodes explored ` +
      `(${pool.config.mode}, ${world.size} ranks, ${seconds.toFixed(3)} s)`,
  );
  if (process.argv.includes("--verify")) {
    const optimum = dynamicProgramming();
    if (optimum !== agreed) {
      console.error(`knapsack: verify FAILED: best value ${agreed}, dynamic programming says ${optimum}`);
      process.exitCode = 1;
    } else console.error(`knapsack: verified: ${optimum} is the optimum (dynamic programming)`);
  }
}
await world.close();
