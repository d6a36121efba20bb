import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync } from "node:fs";
import test from "ava";
import { BIN, fixture, linesOf, ROOT, run, runAlone } from "../helpers/run.ts";
import { CONTINUED, MAX_LINE } from "../../launcher/lines.ts";
import { longLine, SOLO_TEXT } from "../helpers/text.ts";

const LINES = fixture("lines.ts");

test("every output line carries its rank prefix and lines of concurrent ranks never mix", async (t) => {
  const size = 4;
  const count = 150;
  const length = 6000;
  const result = await run(["-n", String(size), LINES, "all", String(count), String(length)]);
  t.is(result.code, 0, result.stderr.slice(0, 2000));
  const next = new Array<number>(size).fill(0);
  let bad = 0;
  for (const line of linesOf(result.stdout)) {
    const m = /^\[(\d+)\] rank (\d+) line (\d+) /.exec(line);
    const r = Number(m?.[1]);
    const i = next[r] ?? -1;
    // Each line must be exactly the next line of the rank its prefix names.
    if (!m || line !== `[${r}] ${longLine(r, i, length)}`) {
      if (bad++ < 3) t.fail(`unexpected line (${line.length} chars): ${line.slice(0, 80)}...`);
      continue;
    }
    next[r] = i + 1;
  }
  t.is(bad, 0);
  t.deepEqual(next, new Array<number>(size).fill(count));
  const errs = linesOf(result.stderr);
  for (let r = 0; r < size; r++) {
    const mine = errs.filter((l) => l.startsWith(`[${r}] `));
    t.deepEqual(
      mine,
      Array.from({ length: count / 10 }, (_, k) => `[${r}] rank ${r} err ${k * 10}`),
    );
  }
  t.is(errs.length, (size * count) / 10);
});

test("with --no-prefix, rank 0's output reads exactly as when the app runs alone", async (t) => {
  const launched = await run(["-n", "3", "--no-prefix", LINES, "solo"]);
  const alone = await runAlone(LINES, ["solo"]);
  t.is(launched.code, 0, launched.stderr);
  t.is(alone.code, 0, alone.stderr);
  t.is(launched.stdout, SOLO_TEXT);
  t.is(alone.stdout, SOLO_TEXT);
  t.is(launched.stderr, "solo stderr\n");
  t.is(alone.stderr, "solo stderr\n");
});

test("a huge line without a newline is passed on in pieces; the launcher survives it", async (t) => {
  const n = 40_000_000;
  const r = await run(["-n", "1", fixture("long-line.ts"), String(n)]);
  t.is(r.code, 0, r.stderr.slice(0, 2000));
  const lines = linesOf(r.stdout);
  t.is(lines.at(-1), "[0] after");
  const pieces = lines.slice(0, -1);
  t.true(pieces.length > 30, `${pieces.length} pieces`);
  let chars = 0;
  for (const [i, line] of pieces.entries()) {
    t.true(line.startsWith("[0] x"));
    const last = i === pieces.length - 1;
    t.is(line.endsWith(CONTINUED), !last);
    const body = line.slice("[0] ".length, last ? undefined : -CONTINUED.length);
    t.true(body.length <= MAX_LINE);
    chars += body.length;
  }
  t.is(chars, n, "every character arrives once");
});

test("a reader that goes away (| head) costs the job nothing: no crash, no stack trace, the job ends as it would", async (t) => {
  const child = spawn(process.execPath, [BIN, "launch", "-n", "2", LINES, "all", "150", "6000"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => {
    stderr += chunk;
  });
  // Like head -1: read the first chunk, then close the pipe while the ranks still write.
  child.stdout.once("data", () => child.stdout.destroy());
  const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
  t.is(code, 0, stderr.slice(0, 2000));
  t.false(/\n\s+at /.test(stderr), `a stack trace: ${stderr.slice(0, 2000)}`);
  t.regex(stderr, /workpool: standard output was closed \(EPIPE\): the job goes on/);
});

test("standard output that fails (a full disk: /dev/full) is said once, and the launcher's status is 1", async (t) => {
  if (!existsSync("/dev/full")) return t.pass("no /dev/full here");
  const full = openSync("/dev/full", "w");
  try {
    const child = spawn(process.execPath, [BIN, "launch", "-n", "2", LINES, "all", "20", "100"], {
      cwd: ROOT,
      stdio: ["ignore", full, "pipe"],
    });
    let stderr = "";
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      stderr += chunk;
    });
    const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
    t.is(code, 1, stderr.slice(0, 2000));
    t.false(/\n\s+at /.test(stderr), `a stack trace: ${stderr.slice(0, 2000)}`);
    t.is(stderr.match(/workpool: standard output failed \(ENOSPC\)/g)?.length, 1, stderr.slice(0, 2000));
  } finally {
    closeSync(full);
  }
});
