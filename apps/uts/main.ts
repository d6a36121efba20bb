/**
 * Unbalanced Tree Search (UTS, Olivier et al., LCPC 2006) on a workpool: count the nodes, leaves and depth of a
 * tree that exists only as a SHA-1 splittable random number generator, its shape unknown until walked.
 *
 *   workpool launch -n 8 [--pool ...] apps/uts [--tree NAME | UTS flags] [--sequential] [--verify] [--speedup]
 *     [--json] [--repeat K] [--list]
 *
 * `--tree T1` names a published sample tree (T1-T5, T1L-T3L, T1XL, T1XXL, T3XXL, T2XXL, T1WL-T3WL) or a small
 * one of ours (T1XS, the default, ~1M nodes; T1XXS-T5XXS, thousands); `--list` prints them with their counts.
 * UTS's flags give any tree (unset ones take UTS's defaults) or override a named tree's: -t type (0 binomial,
 * 1 geometric, 2 hybrid, 3 balanced), -a shape (0 linear, 1 expdec, 2 cyclic, 3 fixed), -d gen_mx, -b b0, -q,
 * -m, -r seed, -f hybrid shift, -g granularity (long forms: --type, --shape, --depth, --b0, --q, --m, --seed,
 * --shift, --granularity). A task is one node. `--sequential`: a plain explicit-stack loop on rank 0 instead,
 * the benchmark's reference. `--verify`: the counts must equal the named tree's, else a sequential search's;
 * a mismatch exits 1. `--speedup`: after the pool runs, rank 0 times the sequential loop on the same tree (as
 * many runs, the fastest kept) and prints both times, the speedup and the efficiency. `--repeat K`: K runs in the same processes, the fastest reported. Rank 0 (the lowest rank alive, after a death the job survived) prints
 * `uts T1: 4130071 nodes, 3305118 leaves, depth 10 (distributed, 2 ranks, 8.123 s)`, or JSON with `--json`.
 */
import { connect } from "workpool";
import { agreeOnInput } from "../common/agree.ts";
import { runApp } from "../common/args.ts";
import { onLowestSurvivor } from "../common/survivor.ts";
import { type Counts, countsMismatch, formatCounts } from "./counts.ts";
import { expectedCounts, parseOptions, sampleTable, type UtsOptions } from "./options.ts";
import { formatParams } from "./params.ts";
import { searchPool } from "./pool-search.ts";
import { searchSequential } from "./sequential.ts";
import { Tree, type UtsNode } from "./tree.ts";

const APP = "uts";

const world = await connect();

await runApp(
  APP,
  () => world.rank,
  async () => {
    const options = await agreeOnInput(APP, world, () => parseOptions(process.argv.slice(2)));
    if (options.list) {
      if (world.rank === 0) for (const line of sampleTable()) console.log(line);
      await world.close();
      return;
    }
    const pool = world.pool<UtsNode>();
    const tree = new Tree(options.params);
    const variant = options.sequential ? "sequential" : pool.config.mode;
    const ranks = options.sequential ? 1 : world.size;
    const works = !options.sequential || world.rank === 0;

    const runs: number[] = [];
    let first: Counts | undefined;
    for (let run = 0; works && run < options.repeat; run++) {
      if (!options.sequential) await world.barrier();
      const t0 = performance.now();
      const counts = options.sequential ? searchSequential(tree) : await searchPool(world, pool, tree);
      runs.push((performance.now() - t0) / 1000);
      first ??= counts;
      const differs = countsMismatch(counts, first);
      if (differs !== undefined) {
        throw new Error(`${APP}: run ${run + 1} of ${options.repeat} found other counts than run 1: ${differs}`);
      }
    }

    // The lowest rank alive reports: a job that survived rank 0's death (its pool's coordinator elsewhere) still
    // prints its counts, and verifies them.
    const report = (first: Counts) => {
      const seconds = Math.min(...runs);
      const timed = options.speedup ? sequentialBaseline(tree, options.repeat, first) : undefined;
      const baseline = timed?.seconds;
      if (options.json) {
        const timing = options.repeat > 1 ? { runs: runs.map((r) => Number(r.toFixed(4))) } : {};
        const { label, params } = options;
        console.log(
          JSON.stringify({
            tree: label,
            params: formatParams(params),
            ...first,
            seconds: Number(seconds.toFixed(4)),
            variant,
            ranks,
            ...timing,
            ...(baseline
              ? { seqSeconds: Number(baseline.toFixed(4)), speedup: Number((baseline / seconds).toFixed(3)) }
              : {}),
          }),
        );
      } else {
        const where = options.sequential ? "sequential" : `${variant}, ${ranks} ranks`;
        const fastest =
          options.repeat > 1 ? `, fastest of ${options.repeat}: ${runs.map((r) => r.toFixed(3)).join(" ")}` : "";
        console.log(`${APP} ${options.label}: ${formatCounts(first)} (${where}, ${seconds.toFixed(3)} s${fastest})`);
        if (baseline !== undefined) {
          const speedup = baseline / seconds;
          console.log(
            `${APP}: ${variant} on ${ranks} ranks ${seconds.toFixed(3)} s, sequential loop ${baseline.toFixed(3)} s: ` +
              `speedup ${speedup.toFixed(2)}x, efficiency ${(speedup / ranks).toFixed(2)}`,
          );
        }
      }
      if (options.verify) verify(options, first, tree, timed);
    };
    const counts = first;
    if (counts && options.sequential) report(counts);
    else if (counts) await onLowestSurvivor(world, () => report(counts));
    await world.close();
  },
);

/** The sequential loop's counts, and the fastest of its runs in seconds. */
interface Timed {
  readonly counts: Counts;
  readonly seconds: number;
}

/** The fastest of `repeat` runs of the sequential loop; its counts must equal the pool's. */
function sequentialBaseline(tree: Tree, repeat: number, counts: Counts): Timed {
  let best = Number.POSITIVE_INFINITY;
  let found = counts;
  for (let run = 0; run < repeat; run++) {
    const t0 = performance.now();
    found = searchSequential(tree);
    best = Math.min(best, (performance.now() - t0) / 1000);
    const differs = countsMismatch(found, counts);
    if (differs !== undefined)
      throw new Error(`${APP}: the sequential loop found other counts than the pool: ${differs}`);
  }
  return { counts: found, seconds: best };
}

/**
 * Checks `counts` against the named tree's, else against a sequential search (the one `--speedup` timed, if
 * it ran, else one here); a mismatch exits 1.
 */
function verify(options: UtsOptions, counts: Counts, tree: Tree, timed?: Timed): void {
  let expected = expectedCounts(options);
  if (!expected) {
    let sequential = timed;
    if (!sequential) {
      const t0 = performance.now();
      sequential = { counts: searchSequential(tree), seconds: (performance.now() - t0) / 1000 };
    }
    expected = {
      counts: sequential.counts,
      source: `as the sequential search found (${sequential.seconds.toFixed(3)} s)`,
    };
  }
  const bad = countsMismatch(counts, expected.counts);
  if (bad !== undefined) {
    console.error(`${APP}: verify FAILED for ${options.label}: ${bad} (${expected.source})`);
    process.exitCode = 1;
  } else {
    console.error(`${APP}: verified: ${formatCounts(expected.counts)}, ${expected.source}`);
  }
}
