// An app written as an ES module that node loads as CommonJS (lib/control/module-format.ts): the rank's last
// words name the package.json that decides, and the fix; any other error keeps its own words.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import test from "ava";
import { moduleFormatHint } from "../../lib/control/module-format.ts";
import { tempFolder } from "../helpers/folders.ts";
import { linesOf, run } from "../helpers/run.ts";

/** The error node throws for `app` when it awaits at the top level and loads as CommonJS. */
const cycle = (app: string) =>
  Object.assign(new Error(`Cannot require() ES Module ${app} in a cycle. A cycle involving require(esm) ...`), {
    code: "ERR_REQUIRE_CYCLE_MODULE",
  });

test("a TypeScript app that awaits at the top level in a CommonJS package: the summary says which file and the fix", async (t) => {
  const dir = tempFolder(t, "wp-format-");
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "new-app", type: "commonjs" }));
  const app = join(dir, "app.ts");
  writeFileSync(app, "const n = await Promise.resolve(1);\nconsole.log(n);\n");
  const r = await run(["-n", "2", "--timeout", "60", app]);
  t.is(r.code, 1, r.stderr);
  // The fix alone: node's stack, all inside its own loader, is not printed.
  t.is(linesOf(r.stderr).length, 1, r.stderr);
  t.regex(
    linesOf(r.stderr).at(-1) ?? "",
    /^workpool: rank \d failed \(exit code 1\): .*app\.ts is written as an ES module \(it awaits at the top level\), but node loads it as CommonJS: .*package\.json has "type": "commonjs"\. Set "type": "module" there, or name the file app\.mts$/,
  );
});

test("moduleFormatHint: a package.json without a type, a .cts file, and errors that are not the app's format", (t) => {
  const dir = tempFolder(t, "wp-format-");
  writeFileSync(join(dir, "package.json"), "{}");
  const app = join(dir, "main.ts");
  writeFileSync(app, "");
  t.regex(
    moduleFormatHint(cycle(app), app) ?? "",
    /main\.ts is written as an ES module .*package\.json has no "type"\. Set "type": "module" there, or name the file main\.mts$/,
  );
  const cts = join(dir, "main.cts");
  writeFileSync(cts, "");
  t.regex(moduleFormatHint(cycle(cts), cts) ?? "", /its extension makes it CommonJS: name it main\.mts$/);
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  t.is(moduleFormatHint(cycle(app), app), undefined, "an ES module package: something else is wrong");
  t.is(moduleFormatHint(cycle(join(dir, "other.ts")), app), undefined, "another file's cycle");
  const js = join(dir, "main.js");
  const syntax = Object.assign(new SyntaxError("Cannot use import statement outside a module"), {
    stack: `${js}:1\nimport { connect } from "workpool";\n^^^^^^\n\nSyntaxError: Cannot use import statement outside a module`,
  });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "commonjs" }));
  t.regex(moduleFormatHint(syntax, js) ?? "", /\(it has import statements\).*or name the file main\.mjs$/);
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  t.is(moduleFormatHint(new Error("boom"), app), undefined);
  t.is(moduleFormatHint(cycle(app), undefined), undefined);
});
