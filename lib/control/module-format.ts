/**
 * An app file that node loads as CommonJS but that is written as an ES module, said as the fix. `npm init -y`
 * writes `"type": "commonjs"` into a new app's package.json, and every example of workpool awaits at the top
 * level, so this is a new user's first run of a TypeScript app: under tsx's ESM hooks node tries the file as
 * CommonJS, then as a required ES module, and fails with `ERR_REQUIRE_CYCLE_MODULE` ("Cannot require() ES
 * Module app.ts in a cycle ... lazily loaded"), which names neither the package.json nor the fix.
 */
import { readFileSync, realpathSync } from "node:fs";
import { basename, dirname, extname, join } from "node:path";

/** The message that explains `err`, thrown while loading `app`, when its module format is the cause. */
export function moduleFormatHint(err: unknown, given: string | undefined): string | undefined {
  if (!(err instanceof Error) || given === undefined) return undefined;
  // Node names the file by its real path.
  const app = realPath(given);
  const code = (err as { code?: unknown }).code;
  let uses: string;
  if (code === "ERR_REQUIRE_CYCLE_MODULE" && err.message.includes(` ${app} `)) uses = "it awaits at the top level";
  else if (
    err instanceof SyntaxError &&
    err.message === "Cannot use import statement outside a module" &&
    err.stack?.startsWith(`${app}:`)
  )
    uses = "it has import statements";
  else return undefined;
  const ext = extname(app);
  const esm = ext.startsWith(".t") || ext.startsWith(".ct") ? ".mts" : ".mjs";
  const renamed = `${basename(app, ext)}${esm}`;
  if (ext === ".cts" || ext === ".cjs")
    return `${app} is written as an ES module (${uses}), but its extension makes it CommonJS: name it ${renamed}`;
  const scope = packageScope(dirname(app));
  if (scope === undefined)
    return (
      `${app} is written as an ES module (${uses}), but node loads it as CommonJS: no package.json above it ` +
      `says "type": "module". Put one with {"type": "module"} in ${dirname(app)}, or name the file ${renamed}`
    );
  if (scope.type === "module") return undefined;
  const has = scope.type === undefined ? `no "type"` : `"type": ${JSON.stringify(scope.type)}`;
  return (
    `${app} is written as an ES module (${uses}), but node loads it as CommonJS: ${scope.file} has ${has}. ` +
    `Set "type": "module" there, or name the file ${renamed}`
  );
}

/** The nearest package.json at or above `folder`, and its `type` (node's rule for a .js or .ts file). */
function packageScope(folder: string): { file: string; type: unknown } | undefined {
  for (let dir = folder; ; dir = dirname(dir)) {
    const file = join(dir, "package.json");
    let text: string | undefined;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      text = undefined;
    }
    if (text !== undefined) {
      try {
        return { file, type: (JSON.parse(text) as { type?: unknown }).type };
      } catch {
        return { file, type: undefined };
      }
    }
    if (dirname(dir) === dir) return undefined;
  }
}

function realPath(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}
