import { existsSync, readFileSync, statSync } from "node:fs";
import { extname, join, resolve } from "node:path";
import { UsageError } from "./usage-error.ts";

const EXTENSIONS = new Set([".js", ".mjs", ".cjs", ".ts", ".mts", ".cts"]);
const DIRECTORY_ENTRIES = ["main.ts", "index.ts", "main.js", "index.js"];

/** Resolves the app argument to the file every rank runs: a script, or a folder's entry file. */
export function resolveApp(arg: string): string {
  const path = resolve(arg);
  if (!existsSync(path)) throw new UsageError(`app ${JSON.stringify(arg)} does not exist`);
  const st = statSync(path);
  if (st.isDirectory()) {
    for (const entry of DIRECTORY_ENTRIES) {
      const candidate = join(path, entry);
      if (existsSync(candidate)) return candidate;
    }
    const pkg = join(path, "package.json");
    if (existsSync(pkg)) {
      let main: unknown;
      try {
        main = (JSON.parse(readFileSync(pkg, "utf8")) as { main?: unknown }).main;
      } catch (e) {
        throw new UsageError(
          `app folder ${JSON.stringify(arg)}: package.json is not valid JSON (${(e as Error).message})`,
        );
      }
      if (typeof main === "string" && existsSync(join(path, main))) return resolveApp(join(path, main));
    }
    throw new UsageError(
      `app folder ${JSON.stringify(arg)} has none of ${DIRECTORY_ENTRIES.join(", ")} and no package.json "main"`,
    );
  }
  if (!EXTENSIONS.has(extname(path))) {
    throw new UsageError(`app ${JSON.stringify(arg)} must be a .js, .mjs, .ts or .mts file, or a folder`);
  }
  return path;
}
