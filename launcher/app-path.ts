import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, extname, join, relative, resolve } from "node:path";
import { UsageError } from "./usage-error.ts";

const EXTENSIONS = new Set([".js", ".mjs", ".cjs", ".ts", ".mts", ".cts"]);
const DIRECTORY_ENTRIES = ["main.ts", "index.ts", "main.js", "index.js"];

/** Resolves the app argument to the file every rank runs: a script, or a folder's entry file. */
export function resolveApp(arg: string): string {
  const path = resolve(arg);
  if (!existsSync(path)) {
    const near = nearestApp(path);
    const hint = near === undefined ? "" : `; did you mean ${relative(process.cwd(), near) || near}?`;
    throw new UsageError(`app ${JSON.stringify(arg)} does not exist${hint}`);
  }
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

/**
 * For a missing app: the file the user most likely meant, if one is close enough. First the name with an app's
 * extension added (`hello` for hello.ts), then an app file in the same folder whose name is one or two edits away
 * (`queen.ts` for queens.ts); undefined when none is.
 */
function nearestApp(path: string): string | undefined {
  for (const ext of EXTENSIONS) if (existsSync(path + ext)) return path + ext;
  const folder = dirname(path);
  const name = basename(path);
  let names: string[];
  try {
    names = readdirSync(folder).filter((n) => EXTENSIONS.has(extname(n)));
  } catch {
    return undefined;
  }
  let best: string | undefined;
  let bestDistance = 3;
  for (const n of names) {
    const d = editDistance(name, n);
    if (d < bestDistance) {
      best = n;
      bestDistance = d;
    }
  }
  return best === undefined ? undefined : join(folder, best);
}

/** Levenshtein distance between `a` and `b` (insertions, deletions, substitutions). */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + cost);
    }
    prev = row;
  }
  return prev[b.length] as number;
}
