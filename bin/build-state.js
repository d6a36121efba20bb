// Whether the build in dist/ can stand for the TypeScript sources: shared by bin/workpool.js (which runs dist/
// when it can) and the start-up benchmark.
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

/** The folders whose sources `npm run build` compiles into dist/ (tsconfig.build.json's `include`). */
const SOURCE_FOLDERS = ["lib", "launcher"];

/**
 * `missing` when `root` has no dist/launcher/cli.js; `stale` when a source file under lib/ or launcher/ has no
 * output in dist/ or changed after it was built; else `fresh`. A package installed from a tarball ships no
 * sources, so its build is fresh.
 * @param {string} root the package folder
 * @returns {"missing" | "stale" | "fresh"}
 */
export function buildState(root) {
  if (!existsSync(join(root, "dist", "launcher", "cli.js"))) return "missing";
  for (const folder of SOURCE_FOLDERS) {
    const dir = join(root, folder);
    if (!existsSync(dir)) continue;
    for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || entry.name.endsWith(".d.ts") || !/\.(ts|js)$/.test(entry.name)) continue;
      const source = join(entry.parentPath ?? entry.path, entry.name);
      const output = join(root, "dist", source.slice(root.length)).replace(/\.ts$/, ".js");
      if (!existsSync(output) || statSync(source).mtimeMs > statSync(output).mtimeMs) return "stale";
    }
  }
  return "fresh";
}
