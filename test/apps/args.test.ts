import test from "ava";
import { parseArgs } from "../../apps/common/args.ts";
import { badInputLine, InputError } from "../../apps/common/errors.ts";

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
