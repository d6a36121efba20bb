import test from "ava";
import { resolveApp } from "../../launcher/app-path.ts";
import { fixture, linesOf, run } from "../helpers/run.ts";

// test/fixtures/args.ts (and the folder apps that import it) prints `args <rank> <entry file> <JSON argv>`.
function argsLines(size: number, entry: string, args: string[]): string[] {
  return Array.from({ length: size }, (_, r) => `[${r}] args ${r} ${entry} ${JSON.stringify(args)}`);
}

test("a folder app runs its main.ts", async (t) => {
  const result = await run(["-n", "2", "test/fixtures/app-folder", "a"]);
  t.is(result.code, 0, result.stderr);
  t.deepEqual(linesOf(result.stdout).sort(), argsLines(2, "main.ts", ["a"]));
});

test('a folder app without main.ts runs its package.json "main"', async (t) => {
  const result = await run(["-n", "2", fixture("app-package")]);
  t.is(result.code, 0, result.stderr);
  t.deepEqual(linesOf(result.stdout).sort(), argsLines(2, "start.ts", []));
});

test("arguments after the app reach every rank unchanged, even ones that look like launcher options", async (t) => {
  const args = ["-n", "5", "--foo", "--timeout=1", "--", "with space", "", "ü"];
  const result = await run(["--np=3", fixture("args.ts"), ...args]);
  t.is(result.code, 0, result.stderr);
  t.deepEqual(linesOf(result.stdout).sort(), argsLines(3, "args.ts", args));
});

test("-- ends the launcher's options", async (t) => {
  const result = await run(["-n", "2", "--", "test/fixtures/args.ts", "--help"]);
  t.is(result.code, 0, result.stderr);
  t.deepEqual(linesOf(result.stdout).sort(), argsLines(2, "args.ts", ["--help"]));
});

// A missing app names what the user most likely meant: the name with an app's extension, else an app file of
// the same folder one or two edits away; nothing when none is close.
test("a missing app names the file that was likely meant", (t) => {
  const missing = (arg: string, hint = "") => ({ message: `app ${JSON.stringify(arg)} does not exist${hint}` });
  t.throws(
    () => resolveApp("test/fixtures/hello"),
    missing("test/fixtures/hello", "; did you mean test/fixtures/hello.ts?"),
  );
  t.throws(
    () => resolveApp("test/fixtures/helo.ts"),
    missing("test/fixtures/helo.ts", "; did you mean test/fixtures/hello.ts?"),
  );
  t.throws(() => resolveApp("test/fixtures/qqqqzzzz.ts"), missing("test/fixtures/qqqqzzzz.ts"));
  t.throws(() => resolveApp("test/no-such-folder/app.ts"), missing("test/no-such-folder/app.ts"));
});
