/**
 * The node options that size a rank's heap: apart from loader.ts (which resolves tsx when it loads), as
 * bin/workpool.js starts the warm ranks (warm.ts) with them before the launcher has loaded.
 */

/** Most old-generation headroom a rank gets (MiB), and least worth giving (`rankHeapOptions`). */
const HEAP_HEADROOM_MIB = 64;
const MIN_HEAP_HEADROOM_MIB = 16;
/** The V8 flags that size the heap: a rank given any of them (`--node-arg`, NODE_OPTIONS) gets no headroom flag. */
const HEAP_FLAGS = /--(initial|max)[-_](old[-_]space|heap)[-_]size/;

/**
 * Old-generation headroom for each rank: `--initial-old-space-size`, up to HEAP_HEADROOM_MIB and at most an
 * eighth of this machine's memory over the job's ranks (none below MIN_HEAP_HEADROOM_MIB, or when the app's
 * node options size the heap themselves). A rank starts with more in V8's old generation than a plain process
 * (workpool, zeromq, msgpackr: about 8 MB after a full collection, against 5), and V8 sizes its first
 * collections from that: reading and hashing files, each rank ran a full mark-compact about every 35 ms where a
 * plain loop ran one in all, and 2 ranks used 1.35 times the loop's CPU for its work (1.07 with the headroom:
 * `npm run bench -- node-tasks`). The flag reserves nothing; a rank's heap only grows further before its first
 * full collection. It costs each rank about 6 ms at start, as any V8 flag does here (node's cached code for its
 * own modules no longer matches): `launch -n 1` of a hello took 126-133 ms where it took 118-119.
 */
export function rankHeapOptions(
  nodeArgs: readonly string[],
  ranks: number,
  totalMemBytes: number,
  nodeOptions = "",
): string[] {
  if (nodeArgs.some((a) => HEAP_FLAGS.test(a)) || HEAP_FLAGS.test(nodeOptions)) return [];
  const mib = Math.min(HEAP_HEADROOM_MIB, Math.floor(totalMemBytes / 2 ** 20 / 8 / Math.max(1, ranks)));
  return mib >= MIN_HEAP_HEADROOM_MIB ? [`--initial-old-space-size=${mib}`] : [];
}
