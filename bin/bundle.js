// The second step of `npm run build`, after tsc: joins the JavaScript a rank loads (the preload and the library,
// dist/lib/) and the launcher's (dist/launcher/) into a few files. Node's ES module loader reads, resolves and
// links each file on its own: a rank loaded about 80 of them, the launcher 30 before it started a rank. Bundled,
// each rank starts about 25 ms of CPU sooner (64 ranks on 2 cores: 0.8 s), and so does the launcher's first rank.
//
// The entry points keep their paths (dist/lib/index.js, internal.js, internal-start.js, control/boot.js,
// control/preload.js, dist/launcher/cli.js, warm.js), so package.json's exports, bin/workpool.js and the preload's
// path are unchanged; the code they share is in dist/chunks/, one copy, so the preload and the app see the same
// module instances (and bin/workpool.js's warm ranks are the ones the launcher's local back-end takes: warm.ts).
// dist/lib/control/warm.js, the script a warm rank runs, is tsc's alone: it imports only node's modules. dist/chunks/ is as deep as dist/launcher/, so launcher/loader.ts finds the preload and the package
// folder from its import.meta.url whichever of the two its code lands in. The types stay tsc's
// (dist/**/*.d.ts). zeromq and msgpackr stay packages of their own. esbuild comes with tsx, a dependency.
import { existsSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const DIST = `${ROOT}dist`;
const ENTRIES = [
  "lib/index.js",
  "lib/internal.js",
  "lib/internal-start.js",
  "lib/control/boot.js",
  "lib/control/preload.js",
  "launcher/cli.js",
  "launcher/warm.js",
];
const MARK = "// workpool: bundled by bin/bundle.js";

for (const entry of ENTRIES) {
  const file = `${DIST}/${entry}`;
  if (!existsSync(file)) {
    process.stderr.write(`bin/bundle.js: ${file} is missing; run npm run build (tsc first)\n`);
    process.exit(1);
  }
  if (readFileSync(file, "utf8").startsWith(MARK)) {
    process.stderr.write(`bin/bundle.js: ${file} is bundled already; run npm run build (tsc first)\n`);
    process.exit(1);
  }
}

const esbuild = createRequire(createRequire(import.meta.url).resolve("tsx/package.json"))("esbuild");
rmSync(`${DIST}/chunks`, { recursive: true, force: true });
await esbuild.build({
  absWorkingDir: ROOT,
  entryPoints: ENTRIES.map((e) => `dist/${e}`),
  outbase: "dist",
  outdir: "dist",
  allowOverwrite: true,
  bundle: true,
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  format: "esm",
  platform: "node",
  target: "node20",
  packages: "external",
  // Error classes and functions keep their names (an error's name, a stack's frames).
  keepNames: true,
  // Chained to tsc's maps, so `node --enable-source-maps` in a checkout still points into lib/*.ts.
  sourcemap: "linked",
  banner: { js: MARK },
  logLevel: "warning",
});
