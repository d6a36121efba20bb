// `npm run bench` options: a bad one is one line and status 2 before any suite runs (a run takes minutes, so
// a typo must not surface at the end of it). Only the refusals are tested here; the suites themselves are
// measurements, run by `npm run bench`, not by the test suite.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import test from "ava";
import { ROOT, startNode } from "../helpers/run.ts";

/** Every suite is a file bench/<name>.ts that exports `suite`: none may go unregistered. */
const SUITE_FILES = readdirSync(join(ROOT, "bench"))
  .filter((f) => f.endsWith(".ts") && /^export const suite\b/m.test(readFileSync(join(ROOT, "bench", f), "utf8")))
  .map((f) => f.slice(0, -".ts".length))
  .sort();

const bench = (...args: string[]) => startNode(["--import", "tsx", join(ROOT, "bench", "index.ts"), ...args]).result;

const refusals: [args: string[], message: RegExp][] = [
  [["--graph", "x.gr", "apps"], /^bench: option --graph comes before any suite name/],
  [["comm", "--rounds", "2"], /^bench: suite comm takes no options; got --rounds 2$/],
  [["apps", "--graph", "no/such/file.gr"], /^bench: apps: --graph no\/such\/file\.gr: no such file$/],
  [["apps", "--graph"], /^bench: apps: option --graph needs a value$/],
  [["apps", "--rounds", "0"], /^bench: apps: --rounds must be an integer in 1\.\.100; got "0"$/],
  [["apps", "--rounds=two"], /^bench: apps: --rounds must be an integer in 1\.\.100; got "two"$/],
  [["apps", "--frob", "1"], /^bench: apps: unknown option --frob; options: --graph, --rounds$/],
  [["trees", "--tree", "T9"], /^bench: trees: unknown tree "T9" for --tree \(known: T1, /],
  [["trees", "--rounds", "0"], /^bench: trees: --rounds must be an integer in 1\.\.100; got "0"$/],
  [["trees", "--quick=yes"], /^bench: trees: --quick takes no value; got yes$/],
  [["trees", "--quick", "apps"], /^bench: trees: --quick takes no value; got apps \(name other suites before trees\)$/],
  [["trees", "--graph", "x.gr"], /^bench: trees: unknown option --graph; options: --tree, --rounds, --quick$/],
  [["faults", "--seconds", "0"], /^bench: faults: --seconds must be an integer in 1\.\.60; got "0"$/],
  [["strategies", "--seconds", "0"], /^bench: strategies: --seconds must be a number in 0\.1\.\.30; got "0"$/],
  [["strategies", "--frob", "1"], /^bench: strategies: unknown option --frob; options: --seconds, --tree, --rounds$/],
  [["longtasks", "--rounds", "0"], /^bench: longtasks: --rounds must be an integer in 1\.\.100; got "0"$/],
  [["longtasks", "--frob", "1"], /^bench: longtasks: unknown option --frob; options: --rounds$/],
  // The second suite's bad option stops the first suite from starting.
  [["pool", "apps", "--rounds", "-1"], /^bench: apps: --rounds must be an integer in 1\.\.100; got "-1"$/],
];

for (const [args, message] of refusals) {
  test(`bench ${args.join(" ")}: refused before anything runs`, async (t) => {
    const r = await bench(...args);
    t.is(r.code, 2);
    t.regex(r.stderr.trim(), message);
    t.is(r.stdout, "", "no suite started");
  });
}

test("an unknown suite is refused with the list of every suite file", async (t) => {
  const r = await bench("appz");
  t.is(r.code, 2);
  const known = /^bench: unknown suite `appz`; known: (.+)$/.exec(r.stderr.trim());
  t.deepEqual(known?.[1]?.split(", ").sort(), SUITE_FILES);
  t.is(r.stdout, "", "no suite started");
});

test("bench --help lists every suite and the apps and trees suites' options", async (t) => {
  const r = await bench("--help");
  t.is(r.code, 0);
  for (const line of [
    ...SUITE_FILES.map((name) => new RegExp(`^ {2}${name} `, "m")),
    /--graph FILE\.gr/,
    /--rounds N/,
    /--quick/,
  ])
    t.regex(r.stdout, line);
});
