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
