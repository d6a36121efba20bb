import { execFile } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { checkMemory } from "../../launcher/cli.ts";
import { linesOf, ROOT, startWorkpool } from "../helpers/run.ts";

const HELLO = "test/fixtures/hello.ts";
const version = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;

// Each bad command line gets exactly one stderr line, naming what was wrong, exit status 2, and starts nothing.
const bad: [string, string[], string[]][] = [
  ["-n 0", ["launch", "-n", "0", HELLO], ["-n", '"0"']],
  ["-n 1025", ["launch", "-n", "1025", HELLO], ["-n", '"1025"', "1024"]],
  ["-n abc", ["launch", "-n", "abc", HELLO], ["-n", '"abc"']],
  ["--np=2.5", ["launch", "--np=2.5", HELLO], ["--np", '"2.5"']],
  ["-n without a value", ["launch", "-n"], ["-n", "needs a value"]],
  ["an unknown option", ["launch", "--bogus", HELLO], ['"--bogus"']],
  ["a missing app file", ["launch", "-n", "2", "test/fixtures/no-such-app.ts"], ["no-such-app.ts", "does not exist"]],
  ["an app with a bad extension", ["launch", "test/fixtures/not-an-app.txt"], ["not-an-app.txt", ".ts"]],
  ["a folder with no entry", ["launch", "test/helpers"], ["test/helpers", "main.ts"]],
  ["a missing app argument", ["launch", "-n", "2"], ["missing <app>"]],
  ["a --pool spec with an unknown key", ["launch", "--pool", "centralized,bogus=1", HELLO], ["--pool", "bogus"]],
  ["a --pool spec with an unknown mode", ["launch", "--pool", "scattered", HELLO], ["--pool", "scattered"]],
  [
    "a --pool spec that gives the mode twice",
    ["launch", "--pool", "centralized,mode=distributed", HELLO],
    ["--pool", "`mode` is given twice"],
  ],
  ["an empty --pool spec", ["launch", "--pool", "", HELLO], ["--pool", "empty"]],
  [
    "a --pool spec with an empty part (a key left out)",
    ["launch", "--pool", "distributed,,partner=ring", HELLO],
    ["--pool", "expected key=value", '""'],
  ],
  [
    "a --pool switch that is not true or false",
    ["launch", "--pool", "centralized,coordinatorWorks=yes", HELLO],
    ["--pool", "coordinatorWorks", "true or false"],
  ],
  [
    "a centralized option on a distributed pool",
    ["launch", "--pool", "distributed,coordinatorWorks=true", HELLO],
    ["--pool", "coordinatorWorks", "centralized pools only"],
  ],
  ["--timeout -1", ["launch", "--timeout", "-1", HELLO], ["--timeout", '"-1"']],
  ["--timeout 0", ["launch", "--timeout=0", HELLO], ["--timeout", '"0"']],
  [
    "--timeout beyond a Node timer",
    ["launch", "--timeout", "2500000", HELLO],
    ["--timeout", "from 0.1 to 2147483 (about 24.8 days)", '"2500000"'],
  ],
  [
    "compare --timeout beyond a Node timer",
    ["compare", "--timeout", "2500000", HELLO],
    ["--timeout", "from 0.1 to 2147483"],
  ],
  // Issue 30: `--heartbeat 0.0001` was taken, and killed every job at once.
  [
    "--heartbeat too short to mean anything",
    ["launch", "--heartbeat", "0.0001", HELLO],
    ["--heartbeat must be 0 (no heartbeats) or a number of seconds from 1 to 2147483", '"0.0001"'],
  ],
  ["--heartbeat 0.5", ["launch", "--heartbeat=0.5", HELLO], ["--heartbeat", "from 1 to", '"0.5"']],
  ["--heartbeat -2", ["launch", "--heartbeat", "-2", HELLO], ["--heartbeat", '"-2"']],
  ["--heartbeat beyond a Node timer", ["launch", "--heartbeat", "3e6", HELLO], ["--heartbeat", '"3e6"']],
  [
    "--timeout too short to start a rank",
    ["launch", "--timeout", "0.0001", HELLO],
    ["--timeout", "from 0.1", '"0.0001"'],
  ],
  ["compare --timeout too short", ["compare", "--timeout", "0.01", HELLO], ["--timeout", "from 0.1", '"0.01"']],
  ["--transport udp", ["launch", "--transport", "udp", HELLO], ["--transport", '"udp"']],
  ["--node-arg that is no option", ["launch", "--node-arg", "oops", HELLO], ["--node-arg", '"oops"']],
  ["--node-arg without a value", ["launch", "--node-arg"], ["--node-arg", "needs a value"]],
  ["an unknown command", ["frobnicate"], ['"frobnicate"']],
  // Output paths are checked before any rank starts, not found unwritable after the whole run.
  [
    "--trace into a missing folder",
    ["launch", "-n", "2", "--trace", "test/no-such-folder/t.json", HELLO],
    ["--trace", '"test/no-such-folder/t.json"', "no-such-folder does not exist"],
  ],
  ["--trace onto a folder", ["launch", "--trace=test/fixtures", HELLO], ["--trace", '"test/fixtures"', "is a folder"]],
  [
    "--trace under a file",
    ["launch", "--trace", "package.json/t.json", HELLO],
    ["--trace", "package.json is not a folder"],
  ],
  ["an empty --trace", ["launch", "--trace=", HELLO], ["--trace", "needs a file name"]],
  [
    "--stats-json into a missing folder",
    ["launch", "--stats-json", "test/no-such-folder/s.json", HELLO],
    ["--stats-json", "does not exist"],
  ],
  [
    "compare --report into a missing folder",
    ["compare", "--report", "test/no-such-folder/r.html", HELLO],
    ["--report", '"test/no-such-folder/r.html"', "does not exist"],
  ],
  ["compare --report onto a folder", ["compare", "--report", "test", HELLO], ["--report", "is a folder"]],
  [
    "compare --trace-dir under a file",
    ["compare", "--trace-dir", "package.json/traces", HELLO],
    ["--trace-dir", "package.json is not a folder"],
  ],
];

for (const [what, args, mentions] of bad) {
  test(`${what}: one stderr line and status 2`, async (t) => {
    const result = await startWorkpool(args).result;
    t.is(result.code, 2, result.stderr);
    t.is(result.stdout, "");
    t.regex(result.stderr, /^workpool: [^\n]+\n$/);
    for (const m of mentions) t.true(result.stderr.includes(m), `${JSON.stringify(result.stderr)} mentions ${m}`);
  });
}

test("workpool --help prints usage and exits 0", async (t) => {
  const result = await startWorkpool(["--help"]).result;
  t.is(result.code, 0);
  t.regex(result.stdout, /^Usage: workpool <command>/);
  t.true(result.stdout.includes("launch"));
  t.is(result.stderr, "");
});

test("workpool launch --help prints the launch options and exits 0", async (t) => {
  const result = await startWorkpool(["launch", "--help"]).result;
  t.is(result.code, 0);
  t.regex(result.stdout, /^Usage: workpool launch/);
  for (const option of ["--np", "--pool", "--timeout", "--transport", "--no-prefix"]) {
    t.true(result.stdout.includes(option), option);
  }
  t.is(result.stderr, "");
});

for (const flag of ["--version", "-v"]) {
  test(`workpool ${flag} prints the package version and exits 0`, async (t) => {
    const result = await startWorkpool([flag]).result;
    t.is(result.code, 0);
    t.is(result.stdout, `${version}\n`);
    t.is(result.stderr, "");
  });
}

test("--node-arg reaches node on every rank, in order, before the app", async (t) => {
  const r = await startWorkpool([
    "launch",
    "-n",
    "2",
    "--node-arg=--stack-size=900",
    "--node-arg",
    "--max-old-space-size=3000",
    "test/fixtures/exec-argv.ts",
  ]).result;
  t.is(r.code, 0, r.stderr);
  const lines = linesOf(r.stdout).sort();
  t.is(lines.length, 2);
  for (const [rank, line] of lines.entries()) {
    const m = /^\[(\d+)\] execArgv (\d+) (.*)$/.exec(line);
    t.truthy(m, line);
    t.is(Number(m?.[2]), rank);
    const execArgv = JSON.parse(m?.[3] ?? "[]") as string[];
    t.deepEqual(execArgv.slice(0, 2), ["--stack-size=900", "--max-old-space-size=3000"]);
  }
});

// A job of one rank has no connection to make: the launcher serves no rendezvous and makes no key (nor loads
// zeromq to make one); a larger job's ranks get both.
test("launch -n 1 gives its rank no rendezvous and no key; -n 2 gives every rank both", async (t) => {
  const lines = async (args: string[]) => {
    const r = await startWorkpool(["launch", "--no-prefix", ...args, "test/fixtures/job-env.ts"]).result;
    t.is(r.code, 0, r.stderr);
    return linesOf(r.stdout).sort();
  };
  t.deepEqual(await lines(["-n", "1"]), ["job-env rendezvous=0 key=0 insecure=0 rank=0 size=1"]);
  t.deepEqual(await lines(["-n", "2"]), [
    "job-env rendezvous=1 key=1 insecure=0 rank=0 size=2",
    "job-env rendezvous=1 key=1 insecure=0 rank=1 size=2",
  ]);
});

// The installed command (bin/workpool, a link to it as npm makes one) starts the launcher without
// NODE_EXTRA_CA_CERTS, which node would parse at the launcher's start for nothing; every rank gets the variable
// back exactly: a path, empty, or unset.
test("the installed command starts the launcher without NODE_EXTRA_CA_CERTS and gives every rank it back as set", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "wp-bin-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const link = join(dir, "workpool");
  symlinkSync(join(ROOT, "bin", "workpool"), link);
  const run = (ca: string | undefined) =>
    new Promise<string[]>((resolve, reject) => {
      const env: NodeJS.ProcessEnv = {};
      for (const [k, v] of Object.entries(process.env))
        if (!k.startsWith("WORKPOOL_") && k !== "NODE_EXTRA_CA_CERTS") env[k] = v;
      if (ca !== undefined) env.NODE_EXTRA_CA_CERTS = ca;
      execFile(
        link,
        ["launch", "-n", "2", "--no-prefix", "test/fixtures/ca-env.mjs"],
        { cwd: ROOT, env },
        (e, out, err) => (e ? reject(new Error(`${e.message}\n${err}`)) : resolve(linesOf(out).sort())),
      );
    });
  const bundle = join(dir, "extra certs.pem");
  writeFileSync(bundle, "");
  for (const [ca, shown] of [
    [bundle, JSON.stringify(bundle)],
    ["", '""'],
    [undefined, "null"],
  ] as const) {
    t.deepEqual(
      await run(ca),
      [0, 1].map((rank) => `ca-env rank=${rank} ca=${shown} held=0 launcher=0`),
      `NODE_EXTRA_CA_CERTS ${shown}`,
    );
  }
});

test("a --node-arg node refuses fails the job with node's own words and its status, blaming that option", async (t) => {
  const [unknown, badValue] = await Promise.all([
    startWorkpool(["launch", "-n", "2", "--node-arg=--no-such-node-flag", HELLO]).result,
    // Node then also complains about options it adds itself (--harmony-import-attributes), last.
    startWorkpool(["launch", "-n", "2", "--node-arg=--stack-size=900", "--node-arg=--max-old-space-size=abc", HELLO])
      .result,
  ]);
  t.is(unknown.code, 9);
  t.regex(
    linesOf(unknown.stderr).at(-1) as string,
    /^workpool: rank \d failed \(exit code 9\): node refused --node-arg=--no-such-node-flag: \S*node: bad option: --no-such-node-flag$/,
  );
  t.is(badValue.code, 9);
  t.regex(
    linesOf(badValue.stderr).at(-1) as string,
    /^workpool: rank \d failed \(exit code 9\): node refused --node-arg=--max-old-space-size=abc: .*--max-old-space-size=abc/,
  );
});

test("an unusable TMPDIR (missing, not a folder, no folder can be made in it) is one line naming it, status 2, and nothing made", async (t) => {
  const missing = join(ROOT, "test", "no-such-tmp");
  for (const [tmp, why] of [
    [missing, "no such folder"],
    [join(ROOT, "package.json"), "not a folder"],
  ] as const) {
    const r = await startWorkpool(["launch", "-n", "2", HELLO], { TMPDIR: tmp }).result;
    t.is(r.code, 2, r.stderr);
    t.is(r.stdout, "");
    t.is(
      r.stderr,
      `workpool: TMPDIR=${JSON.stringify(tmp)} cannot hold the job's temporary files: ${why}; ` +
        "set TMPDIR to a folder you can write in, or unset it\n",
    );
  }
  t.false(existsSync(missing));
  // A folder no one can make a folder in (procfs on Linux: ENOENT to mkdir, even for root).
  const proc = await startWorkpool(["launch", HELLO], { TMPDIR: "/proc" }).result;
  t.is(proc.code, 2, proc.stderr);
  t.regex(
    proc.stderr,
    /^workpool: TMPDIR="\/proc" cannot hold the job's temporary files: no folder can be made in it \(E[A-Z]+\); /,
  );
  t.is(linesOf(proc.stderr).length, 1);
});

test("a TMPDIR too long for the job's socket paths is one line naming it, status 2, and no job folder left", async (t) => {
  const base = mkdtempSync(join(tmpdir(), "wp-long-"));
  const long = join(base, "x".repeat(100 - base.length));
  mkdirSync(long, { mode: 0o700 });
  try {
    // Without the check the launcher died with a stack trace (ENAMETOOLONG, or EADDRINUSE from a cut path).
    for (const np of ["1", "2"]) {
      const r = await startWorkpool(["launch", "-n", np, HELLO], { TMPDIR: long }).result;
      t.is(r.code, 2, r.stderr);
      t.is(r.stdout, "");
      t.regex(
        r.stderr,
        /^workpool: TMPDIR=".*" is too long a path for the job's sockets: they would be named like .*\/rendezvous \(\d+ bytes; a Unix socket's path has at most 107\); set TMPDIR to a shorter folder\n$/,
      );
      const parent = readdirSync(long).find((f) => f.startsWith("workpool-"));
      t.deepEqual(parent === undefined ? [] : readdirSync(join(long, parent)), [], "a job folder was left");
    }
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test("a job whose ranks cannot fit in memory is refused with the estimate, unless forced", (t) => {
  const gib24 = 24 * 2 ** 30;
  t.throws(() => checkMemory(1024, false, gib24), {
    message:
      /^-n 1024 needs about 56\.0 GiB \(1024 ranks x ~56 MB each, idle\) but this machine has 24\.0 GiB; use fewer ranks, or --force/,
  });
  t.notThrows(() => checkMemory(1024, true, gib24));
  t.notThrows(() => checkMemory(64, false, gib24));
});
