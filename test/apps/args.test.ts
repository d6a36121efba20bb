import test from "ava";
import { parseArgs, wantsHelp } from "../../apps/common/args.ts";
import { badInputLine, InputError } from "../../apps/common/errors.ts";
import { startWorkpool } from "../helpers/run.ts";

const SPEC = { pgm: "list", block: "value", json: "switch" } as const;

test("parseArgs: a list option takes every argument up to the next --option, and appends when repeated", (t) => {
  t.deepEqual(parseArgs("app", ["--pgm", "a", "b", "--block", "8", "--pgm=c", "d", "--json"], SPEC), {
    pgm: ["a", "b", "c", "d"],
    block: "8",
    json: true,
  });
  t.deepEqual(parseArgs("app", ["--json", "--pgm", "a"], SPEC), { json: true, pgm: ["a"] });
});

test("parseArgs: errors name the option", (t) => {
  t.throws(() => parseArgs("app", ["--pgm"], SPEC), {
    instanceOf: InputError,
    message: "app: option --pgm needs at least one value",
  });
  t.throws(() => parseArgs("app", ["--pgm", "--json"], SPEC), { message: /--pgm needs at least one value/ });
  t.throws(() => parseArgs("app", ["--block"], SPEC), { message: "app: option --block needs a value" });
  t.throws(() => parseArgs("app", ["--json=1"], SPEC), { message: "app: option --json takes no value" });
  t.throws(() => parseArgs("app", ["stray"], SPEC), { message: 'app: unexpected argument "stray"' });
  t.throws(() => parseArgs("app", ["--toString"], SPEC), { message: /unknown option --toString/ });
});

test("badInputLine: InputError and file errors make one line, anything else is not bad input", (t) => {
  t.is(badInputLine("app", new InputError("block too big")), "app: block too big");
  t.is(badInputLine("app", new InputError("app: already named")), "app: already named");
  const enoent = Object.assign(new Error("x"), { path: "/nope.pgm", code: "ENOENT" });
  t.is(badInputLine("app", enoent), "app: cannot read /nope.pgm: no such file");
  t.is(badInputLine("app", new TypeError("a bug")), undefined);
});

// Every app answers --help (and -h) with its usage, once (rank 0), and status 0, on any number of ranks.
for (const app of ["uts", "mandelbrot", "lcs", "shortest-paths", "block-matching"]) {
  test(`apps/${app} --help: its usage from rank 0, status 0`, async (t) => {
    const r = await startWorkpool(["launch", "-n", "2", `apps/${app}`, "--help"]).result;
    t.is(r.code, 0, r.stderr);
    const lines = r.stdout.split("\n").filter((l) => l !== "");
    t.regex(lines[0] ?? "", new RegExp(`^\\[0\\] Usage: workpool launch -n N .*apps/${app} \\[options\\]$`));
    t.true(
      lines.every((l) => l.startsWith("[0] ")),
      r.stdout,
    );
    t.true(
      lines.some((l) => /^\[0\] {3}-h, --help {2,}show this help$/.test(l)),
      r.stdout,
    );
    t.is(r.stderr, "");
  });
}

test("wantsHelp: --help or -h anywhere among an app's arguments", (t) => {
  t.true(wantsHelp(["--size", "10x10", "--help"]));
  t.true(wantsHelp(["-h"]));
  t.false(wantsHelp(["--json", "--helpful"]));
});
