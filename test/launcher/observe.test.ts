import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { fixture, run, startWorkpool } from "../helpers/run.ts";

const RESULT = fixture("pool-result.ts");
const TREE = fixture("pool-tree.ts");

function scratch(): string {
  return mkdtempSync(join(tmpdir(), "wp-observe-"));
}

test("compare: a row per configuration, the fastest marked, results agree", async (t) => {
  const r = await startWorkpool([
    "compare",
    "-n",
    "3",
    "--pool",
    "centralized",
    "--pool",
    "centralized,chunk=2",
    "--repeat",
    "2",
    RESULT,
  ]).result;
  t.is(r.code, 0, r.stderr);
  const rows = r.stdout.split("\n").filter((l) => /^centralized/.test(l));
  t.is(rows.length, 2, r.stdout);
  t.regex(rows[0] as string, /^centralized\s+\d+\.\d{3}\s+\d+\.\d{3}\s+\d+\.\d{3}\s+200\s/);
  t.regex(rows[1] as string, /^centralized,chunk=2\s/);
  t.is(rows.filter((l) => l.includes("<- fastest")).length, 1);
  t.regex(r.stdout, /results agree: all 4 runs printed the same rank-0 result line/);
  t.regex(r.stderr, /compare: centralized run 2\/2: \d+\.\d+ s/);
});

test("compare: a disagreeing app is reported as such, with a non-zero status", async (t) => {
  const r = await startWorkpool([
    "compare",
    "-n",
    "2",
    "--pool",
    "centralized",
    "--pool",
    "centralized,chunk=3",
    "--repeat",
    "1",
    RESULT,
    "--disagree",
  ]).result;
  t.is(r.code, 1);
  t.regex(r.stdout, /results DISAGREE: 2 different rank-0 result lines/);
  t.regex(r.stdout, /\{"tasks":200,"total":20100\}\n\s+from centralized #1/);
  t.regex(r.stdout, /\{"tasks":200,"total":20101\}\n\s+from centralized,chunk=3 #1/);
});

test("compare: bad options get one line and status 2", async (t) => {
  const r = await startWorkpool(["compare", "--repeat", "0", RESULT]).result;
  t.is(r.code, 2);
  t.is(r.stderr.trim(), 'workpool: option --repeat must be a whole number from 1 to 1000; got "0"');
  const p = await startWorkpool(["compare", "--pool", "distributed,partner=rnd", RESULT]).result;
  t.is(p.code, 2);
  t.regex(p.stderr, /pool option `partner` must be one of round-robin, random, ring; got `rnd`/);
});

test("--trace writes Trace Event Format JSON with one track per rank", async (t) => {
  const dir = scratch();
  const file = join(dir, "trace.json");
  const r = await run(["-n", "4", "--trace", file, TREE, "5", "4"]);
  t.is(r.code, 0, r.stderr);
  const trace = JSON.parse(readFileSync(file, "utf8")) as {
    traceEvents: {
      ph: string;
      pid: number;
      name: string;
      args?: { name?: string };
      ts?: number;
      dur?: number;
      id?: string;
    }[];
  };
  const names = trace.traceEvents.filter((e) => e.ph === "M" && e.name === "process_name");
  t.deepEqual(
    names.map((e) => [e.pid, e.args?.name]),
    [0, 1, 2, 3].map((r) => [r, `rank ${r}`]),
  );
  for (const e of trace.traceEvents.filter((e) => e.ph !== "M")) {
    t.true(Number.isInteger(e.ts) && e.pid >= 0 && e.pid < 4, JSON.stringify(e));
  }
  // Every task of the tree (1365) is on a worker's track exactly once (which workers ran them is the
  // scheduler's business: a worker keeps the tasks it puts, and 1365 no-op tasks may all run on one before
  // the others ask); the coordinator's track shows dealing; every flow that starts also ends.
  const taskSpans = trace.traceEvents.filter((e) => e.ph === "X" && e.name.startsWith("task"));
  t.true(taskSpans.every((e) => e.pid >= 1 && e.pid <= 3));
  t.is(
    taskSpans.reduce((sum, e) => sum + ((e.args as { tasks?: number } | undefined)?.tasks ?? 0), 0),
    1365,
  );
  t.true(trace.traceEvents.some((e) => e.pid === 0 && e.name === "coordinating"));
  const starts = new Set(trace.traceEvents.filter((e) => e.ph === "s").map((e) => e.id));
  const ends = new Set(trace.traceEvents.filter((e) => e.ph === "f").map((e) => e.id));
  t.true(starts.size > 0);
  t.deepEqual([...ends].sort(), [...starts].sort());
  rmSync(dir, { recursive: true, force: true });
});

test("--stats prints the per-rank table; no progress line when stderr is piped", async (t) => {
  const r = await run(["-n", "3", "--stats", TREE, "5", "4"]);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stderr, /workpool: pool1 run 1 \(centralized\) statistics/);
  t.regex(r.stderr, /\nall\s+1,365\s+1,365\s/);
  t.notRegex(r.stderr, /tasks done/);
  t.false(r.stderr.includes("\r"));
});

const chromium = "/usr/bin/chromium";
test("compare --report renders in a real browser with a row, a bar and a timeline per configuration", async (t) => {
  if (!existsSync(chromium)) {
    t.fail(`${chromium} is missing: .ci/run installs Debian's chromium`);
    return;
  }
  const { chromium: pw } = await import("playwright-core");
  const dir = scratch();
  const report = join(dir, "report.html");
  const r = await startWorkpool([
    "compare",
    "-n",
    "3",
    "--pool",
    "centralized",
    "--pool",
    "centralized,chunk=2",
    "--repeat",
    "1",
    "--report",
    report,
    TREE,
    "5",
    "4",
  ]).result;
  t.is(r.code, 0, r.stderr);
  const browser = await pw.launch({
    executablePath: chromium,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
    ],
  });
  try {
    const page = await browser.newPage();
    await page.goto(`file://${report}`);
    t.is(await page.locator("table.results tbody tr").count(), 2);
    t.is(await page.locator("#wall-chart rect.bar").count(), 2);
    const box = await page.locator("#wall-chart").boundingBox();
    t.true((box?.width ?? 0) > 100 && (box?.height ?? 0) > 10);
    t.is(await page.locator("section.config").count(), 2);
    for (const section of await page.locator("section.config").all()) {
      t.is(await section.locator("svg.timeline g.rank").count(), 3);
      t.true((await section.locator("g.busy rect").count()) > 0);
    }
  } finally {
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
