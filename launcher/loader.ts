/**
 * How a rank's node process loads its code: from the TypeScript sources or from the build in dist/, whichever
 * this launcher runs from (bin/workpool.js chooses; docs/package.md), so a job never mixes the two.
 *
 * - From sources: every rank resolves `workpool` to lib/*.ts (the `workpool-source` condition) and runs under
 *   tsx, whatever the app's language.
 * - From dist/: `workpool` is the built JavaScript, and only a TypeScript app loads tsx. A JavaScript app's ranks
 *   load no loader at all: no compiler thread, no compile step (docs/package.md has the start-up figures).
 */
export const FROM_SOURCE = import.meta.url.endsWith(".ts");

/** The package's folder (package.json, bin/), from sources (launcher/) or from dist/launcher/. */
export const PACKAGE_ROOT = new URL(FROM_SOURCE ? "../" : "../../", import.meta.url);

/**
 * The TypeScript loader every rank of a TypeScript app (and every bench reference program) runs under: tsx's
 * ESM hooks only.
 *
 * Not plain `tsx`, which also hooks `require` on the main thread. There tsx scans each CommonJS file with a
 * WebAssembly lexer, and a file larger than the lexer's memory (zeromq's index.js) grows that memory, which
 * detaches an ArrayBuffer. From then on V8 checks for a detached buffer at every typed-array access it
 * compiles: measured, the block-matching search ran 10-20% slower in any process that had loaded zeromq.
 * The ESM hooks run on their own thread, so their lexer cannot do this to the rank's code.
 */
export const TS_LOADER: string = resolveTsx() ?? "tsx/esm";

function resolveTsx(): string | undefined {
  try {
    return import.meta.resolve("tsx/esm");
  } catch {
    // Not installed (a JavaScript-only install may prune it): only a TypeScript app needs it.
    return undefined;
  }
}

/** Loaded into every rank before the app: its control channel to the launcher (lib/control/preload.ts). */
const PRELOAD = new URL(FROM_SOURCE ? "../lib/control/preload.ts" : "../lib/control/preload.js", import.meta.url).href;

/**
 * Loaded before the preload, on its own: it moves a remote rank's job variables into the environment
 * (lib/control/boot.ts). The preload imports it first too, but in dist/ the preload is bundled (bin/bundle.js),
 * and a bundle's shared chunks are evaluated before its own first line: a module that reads the environment
 * when it loads (report.ts) would read it before the job variables are there.
 */
const BOOT = new URL(FROM_SOURCE ? "../lib/control/boot.ts" : "../lib/control/boot.js", import.meta.url).href;

const TYPESCRIPT = /\.[cm]?tsx?$/;

/** True when `app` (a resolved file) needs a TypeScript loader. */
export function isTypeScript(app: string): boolean {
  return TYPESCRIPT.test(app);
}

/**
 * The node options a rank needs before its app file: the loader (if any) and the preload. A JavaScript app that
 * imports TypeScript files of its own needs `--node-arg=--import=tsx/esm` when the launcher runs from dist/.
 */
export function rankNodeOptions(app: string): string[] {
  if (FROM_SOURCE)
    return ["--conditions=workpool-source", "--import", TS_LOADER, "--import", BOOT, "--import", PRELOAD];
  return [...(isTypeScript(app) ? ["--import", TS_LOADER] : []), "--import", BOOT, "--import", PRELOAD];
}

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
