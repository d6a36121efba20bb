/**
 * Named UTS trees and their counts.
 *
 * Published: the sample workloads of the UTS 2.1 distribution, parameters and counts copied from its
 * sample_trees.sh (as kept in github.com/shwestrick/mini-uts, "derived from the authors' original code,
 * version 2.1"; the same table is in the UTS sources' verifyStats, e.g. the STAPL port). "-" where the file
 * gives no figure. `uts-default` is UTS's built-in defaults (the C program with no arguments), whose counts
 * are in that verifyStats table too (depth from running the C program).
 *
 * Not published: smaller trees of the same families for quick runs and tests (`XS`, `XXS`), counted here with
 * the UTS 2.1 C reference (mini-uts `dfs`) and, identically, by this implementation's sequential search.
 */
import type { Counts } from "./counts.ts";
import { parseUtsArgs, sameTree, type TreeParams } from "./params.ts";

export interface SampleTree {
  readonly name: string;
  /** The UTS command line, as in sample_trees.sh. */
  readonly args: string;
  readonly params: TreeParams;
  /** What the tree is, as sample_trees.sh labels it. */
  readonly kind: string;
  /** The known counts; a field is missing when the source gives none. */
  readonly counts: Partial<Counts> & { readonly nodes: number };
  /** Where the counts come from: the UTS distribution, or the UTS C reference run here. */
  readonly source: "published" | "reference";
}

function tree(
  name: string,
  args: string,
  kind: string,
  source: SampleTree["source"],
  nodes: number,
  depth?: number,
  leaves?: number,
): SampleTree {
  return { name, args, params: parseUtsArgs(args), kind, source, counts: { nodes, depth, leaves } };
}

/**
 * The bundled default: T1 stopped one level short (gen_mx 9 instead of 10), 1,031,269 nodes, about 1.5 s
 * sequentially on a 2-core test machine (T1 itself, 4.1M nodes, takes about 6-10 s there). No published tree
 * is smaller than about 4M nodes, so this one is ours; its counts come from the UTS C reference.
 */
export const DEFAULT_TREE = "T1XS";

export const SAMPLE_TREES: readonly SampleTree[] = [
  // Small workloads (~4 million nodes), published.
  tree("T1", "-t 1 -a 3 -d 10 -b 4 -r 19", "Geometric [fixed]", "published", 4130071, 10, 3305118),
  tree("T5", "-t 1 -a 0 -d 20 -b 4 -r 34", "Geometric [linear dec.]", "published", 4147582, 20, 2181318),
  tree("T2", "-t 1 -a 2 -d 16 -b 6 -r 502", "Geometric [cyclic]", "published", 4117769, 81, 2342762),
  tree("T3", "-t 0 -b 2000 -q 0.124875 -m 8 -r 42", "Binomial", "published", 4112897, 1572, 3599034),
  tree("T4", "-t 2 -a 0 -d 16 -b 6 -r 1 -q 0.234375 -m 4 -r 1", "Hybrid", "published", 4132453, 134, 3108986),
  // Large workloads (~100 million nodes), published.
  tree("T1L", "-t 1 -a 3 -d 13 -b 4 -r 29", "Geometric [fixed]", "published", 102181082, 13, 81746377),
  tree("T2L", "-t 1 -a 2 -d 23 -b 7 -r 220", "Geometric [cyclic]", "published", 96793510, 67, 53791152),
  tree("T3L", "-t 0 -b 2000 -q 0.200014 -m 5 -r 7", "Binomial", "published", 111345631, 17844, 89076904),
  // Extra large (~1.6 billion), extra extra large (~3-10 billion) and wicked large (~150-300 billion), published.
  tree("T1XL", "-t 1 -a 3 -d 15 -b 4 -r 29", "Geometric [fixed]", "published", 1635119272, 15, 1308100063),
  tree("T1XXL", "-t 1 -a 3 -d 15 -b 4 -r 19", "Geometric [fixed]", "published", 4230646601, 15),
  tree("T3XXL", "-t 0 -b 2000 -q 0.499995 -m 2 -r 316", "Binomial", "published", 2793220501),
  tree("T2XXL", "-t 0 -b 2000 -q 0.499999995 -m 2 -r 0", "Binomial", "published", 10612052303, 216370, 5306027151),
  tree("T1WL", "-t 1 -a 3 -d 18 -b 4 -r 19", "Geometric [fixed]", "published", 270751679750, 18, 216601257283),
  tree(
    "T2WL",
    "-t 0 -b 2000 -q 0.4999999995 -m 2 -r 559",
    "Binomial",
    "published",
    295393891003,
    1021239,
    147696946501,
  ),
  tree("T3WL", "-t 0 -b 2000 -q 0.4999995 -m 2 -r 559", "Binomial", "published", 157063495159, 758577, 78531748579),
  // UTS's defaults: counts from the UTS sources' verifyStats (depth from the C reference).
  tree("uts-default", "-t 1 -a 0 -d 6 -b 4 -r 0", "Geometric [linear dec.]", "published", 1732, 6, 1050),
  // Not published: smaller trees of the same families, counted with the UTS 2.1 C reference.
  tree("T1XS", "-t 1 -a 3 -d 9 -b 4 -r 19", "Geometric [fixed]", "reference", 1031269, 9, 825408),
  tree("T1XXS", "-t 1 -a 3 -d 6 -b 4 -r 19", "Geometric [fixed]", "reference", 16000, 6, 12839),
  tree("T2XXS", "-t 1 -a 2 -d 8 -b 6 -r 502", "Geometric [cyclic]", "reference", 25174, 41, 15391),
  tree("T3XXS", "-t 0 -b 20 -q 0.124875 -m 8 -r 42", "Binomial", "reference", 6213, 67, 5438),
  tree("T4XXS", "-t 2 -a 0 -d 8 -b 6 -r 1 -q 0.234375 -m 4", "Hybrid", "reference", 15914, 73, 11966),
  tree("T5XXS", "-t 1 -a 0 -d 12 -b 4 -r 34", "Geometric [linear dec.]", "reference", 21579, 12, 11664),
];

/** The named tree, by name in any case (`t1` is T1). */
export function sampleTree(name: string): SampleTree | undefined {
  const lower = name.toLowerCase();
  return SAMPLE_TREES.find((t) => t.name.toLowerCase() === lower);
}

/** The named tree with these parameters, if any (so counts are known for T1 given as `-t 1 -a 3 ...` too). */
export function sampleWithParams(params: TreeParams): SampleTree | undefined {
  return SAMPLE_TREES.find((t) => sameTree(t.params, params));
}
