// `workpool compare` end to end: a sweep over -n with a baseline, a disagreeing app, bad options, and the HTML
// report rendered in a real browser (Chromium through playwright-core).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { chromium } from "playwright-core";
import { PARTNERS } from "../../lib/pool/config.ts";
import { findBrowser } from "../helpers/browser.ts";
import { fixture, type RunResult, startWorkpool } from "../helpers/run.ts";

const APP = fixture("compare-app.ts");
const dir = mkdtempSync(join(tmpdir(), "wp-compare-test-"));
test.after.always(() => rmSync(dir, { recursive: true, force: true }));

/** Runs once, when a test first asks for it. */
function once<T>(start: () => Promise<T>): () => Promise<T> {
  let p: Promise<T> | undefined;
  return () => (p ??= start());
}

const BASELINE = `${JSON.stringify(process.execPath)} -e 'console.log(JSON.stringify({ seconds: 0.05 }))'`;
const POOLS = ["--pool", "centralized", "--pool", "distributed,partner=ring"];
// The app prints seqSeconds, solveMs and phases.wallTime, different in every run, and with --noise a random
// `runtime`, which only --ignore leaves out.
const sweep = once(
  () =>
    startWorkpool([
      "compare",
      "-n",
      "1,2",
      "--repeat",
      "1",
      ...POOLS,
      "--baseline",
      BASELINE,
      "--ignore",
      "runtime",
      "--report",
      join(dir, "sweep.html"),
      APP,
      "--noise",
      "runtime",
    ]).result,
);
const disagree = once(
  () =>
    startWorkpool([
      "compare",
      "-n",
      "2",
      "--repeat",
      "1",
      ...POOLS,
      "--report",
      join(dir, "disagree.html"),
      APP,
      "--disagree",
    ]).result,
);

/** The table's data rows: configuration, ranks, then the numeric columns. */
function tableRows(r: RunResult): string[][] {
  return r.stdout
    .split("\n")
    .filter((l) => /^(centralized|distributed)\S*\s+\d+\s/.test(l))
    .map((l) => l.split(/\s+/));
}

test("compare -n 1,2 --baseline: a row per configuration and rank count, speedup and efficiency, results agree", async (t) => {
  const r = await sweep();
  t.is(r.code, 0, r.stderr);
  const head = r.stdout.split("\n").find((l) => l.startsWith("configuration")) ?? "";
  t.regex(head, /ranks\s+median s.*\s+busy\s+term ms\s+speedup\s+efficiency$/);
  t.regex(r.stdout, /\nbaseline: 0\.050 s \(median of 1 run, its JSON "seconds"\) of /);
  const rows = tableRows(r);
  t.deepEqual(
    rows.map((c) => [c[0], c[1], c[5]]),
    [
      ["centralized", "1", "200"],
      ["centralized", "2", "200"],
      ["distributed,partner=ring", "1", "200"],
      ["distributed,partner=ring", "2", "200"],
    ],
  );
  for (const c of rows) {
    const median = Number(c[2]);
    const speedup = Number(c[11]);
    // Both printed rounded: the median to 0.0005 s, the speedup to 0.005.
    t.true(Math.abs(speedup - 0.05 / median) <= (speedup * 0.0005) / median + 0.005, c.join(" "));
    t.true(Math.abs(Number((c[12] ?? "").replace("%", "")) - (100 * speedup) / Number(c[1])) <= 0.6, c.join(" "));
  }
  for (const n of ["1", "2"]) {
    const atN = rows.filter((c) => c[1] === n);
    const marked = atN.filter((c) => c.at(-1) === "fastest");
    t.is(marked.length, 1, r.stdout);
    t.is(Number(marked[0]?.[2]), Math.min(...atN.map((c) => Number(c[2]))));
  }
  t.regex(
    r.stdout,
    /\nresults agree: all 4 runs printed the same rank-0 result line \(ignored: runtime, seqSeconds, solveMs, wallTime\)\n/,
  );
  t.regex(r.stderr, /compare: round 1\/1: baseline: 0\.050 s\n/);
  t.regex(r.stderr, /compare: round 1\/1: distributed,partner=ring -n 2: \d+\.\d{3} s/);
});

test("compare --repeat 2: the baseline and the configurations take turns, each round starting one further on", async (t) => {
  const r = await startWorkpool([
    "compare",
    "-n",
    "1",
    "--repeat",
    "2",
    "--pool",
    "centralized",
    "--baseline",
    BASELINE,
    APP,
  ]).result;
  t.is(r.code, 0, r.stderr);
  const order = r.stderr
    .split("\n")
    .filter((l) => l.startsWith("compare: round"))
    .map((l) => l.replace(/: [\d.]+ s$/, ""));
  t.deepEqual(order, [
    "compare: round 1/2: baseline",
    "compare: round 1/2: centralized -n 1",
    "compare: round 2/2: centralized -n 1",
    "compare: round 2/2: baseline",
  ]);
  t.regex(r.stdout, /^workpool compare: 1 rank; 2 runs per configuration and baseline, interleaved round robin; /);
  // Every run ran all 200 tasks: the figure has no spread.
  const row = r.stdout.split("\n").find((l) => l.startsWith("centralized ")) ?? "";
  t.regex(row, /^centralized\s+1\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+200\s/, r.stdout);
});

test("compare: a disagreement comes first, names the differing key, marks nothing fastest, status 1", async (t) => {
  const r = await disagree();
  t.is(r.code, 1, r.stderr);
  const lines = r.stdout.split("\n");
  const banner = lines.findIndex((l) => l.startsWith("results DISAGREE"));
  t.is(
    lines[banner],
    "results DISAGREE: 2 different rank-0 result lines (differing: total); no configuration is marked fastest",
  );
  t.true(banner >= 0 && banner < lines.findIndex((l) => l.startsWith("configuration")), r.stdout);
  t.is(tableRows(r).length, 2);
  t.false(r.stdout.includes("fastest <-") || r.stdout.includes("<- fastest"));
  t.regex(r.stdout, /\{"phases":\{"count":1\},"tasks":200,"total":20100\}\n\s+from centralized -n 2 #1\n/);
  t.regex(r.stdout, /\{"phases":\{"count":1\},"tasks":200,"total":20101\}\n\s+from distributed,partner=ring -n 2 #1\n/);
});

test("compare: bad options get one line and status 2", async (t) => {
  const r = await startWorkpool(["compare", "--repeat", "0", APP]).result;
  t.is(r.code, 2);
  t.is(r.stderr.trim(), 'workpool: option --repeat must be a whole number from 1 to 1000; got "0"');
  const p = await startWorkpool(["compare", "--pool", "distributed,partner=rnd", APP]).result;
  t.is(p.code, 2);
  t.true(p.stderr.includes(`pool option \`partner\` must be one of ${PARTNERS.join(", ")}; got \`rnd\``), p.stderr);
  const n = await startWorkpool(["compare", "-n", "2,,4", APP]).result;
  t.is(n.code, 2);
  t.regex(n.stderr, /^workpool: option -n must be a whole number from 1 to 1024, or a comma-separated list/);
});

const browser = findBrowser();
const BROWSER_TEST = "compare --report renders in a real browser: banners, labels that fit, one time scale";
if (browser.path === undefined && process.env.CI !== "true") {
  console.warn(
    `compare.slow.test.ts: skipping "${BROWSER_TEST}": no Chromium found (looked for ${browser.tried.join(", ")}). ` +
      "Install one with `npx playwright-core install chromium` or your system's chromium package, or set CHROME_PATH.",
  );
  test.skip(BROWSER_TEST, () => {});
} else {
  test(BROWSER_TEST, async (t) => {
    if (browser.path === undefined) {
      t.fail(`CI=true and no Chromium found (looked for ${browser.tried.join(", ")}): .ci/run installs one`);
      return;
    }
    const [s, d] = await Promise.all([sweep(), disagree()]);
    t.is(s.code, 0, s.stderr);
    t.is(d.code, 1, d.stderr);
    const pw = await chromium.launch({
      executablePath: browser.path,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
    });
    try {
      const page = await pw.newPage({ viewport: { width: 1280, height: 900 } });
      const errors: string[] = [];
      page.on("console", (m) => {
        if (m.type() === "error") errors.push(m.text());
      });
      page.on("pageerror", (e) => errors.push(String(e)));

      await page.goto(`file://${join(dir, "sweep.html")}`);
      t.is(await page.locator("#disagreement").count(), 0);
      t.regex((await page.locator("#agreement.good").textContent()) ?? "", /keys ignored: runtime, seqSeconds/);
      t.is(await page.locator("table.results tbody tr").count(), 4);
      t.is(await page.locator("table.results tr.fastest").count(), 2);
      t.deepEqual(await page.locator("table.results tr.fastest .badge").allTextContents(), ["fastest", "fastest"]);
      t.deepEqual(await page.locator("table.results thead th").allTextContents(), [
        "configuration",
        "ranks",
        "median s",
        "min s",
        "max s",
        "tasks",
        "moved",
        "pool msgs",
        "idle",
        "busy",
        "termination ms",
        "speedup",
        "efficiency",
      ]);
      t.is(await page.locator("svg.efficiency").count(), 2);
      for (const chart of await page.locator("svg.efficiency").all()) t.is(await chart.locator("g.point").count(), 2);
      t.is(await page.locator("#wall-chart rect.bar").count(), 4);
      t.is(await page.locator("#wall-chart rect.bar.fastest").count(), 2);
      // Every label is whole (the short name, not cut) and inside its chart, left of the bars.
      // (Page code as text: this project's TypeScript has no DOM types.)
      const labels = (await page.evaluate(`[...document.querySelectorAll("svg text.label")].map((el) => {
        const svg = el.ownerSVGElement;
        const box = el.getBBox();
        const bar = svg.querySelector("rect.bar");
        return {
          text: el.textContent,
          left: box.x,
          right: box.x + box.width,
          width: svg.viewBox.baseVal.width,
          barX: bar ? Number(bar.getAttribute("x")) : Infinity,
        };
      })`)) as { text: string; left: number; right: number; width: number; barX: number }[];
      t.deepEqual(labels.map((l) => l.text).sort(), [
        "central",
        "central",
        "dist recv/ring/token",
        "dist recv/ring/token",
      ]);
      for (const l of labels) t.true(l.left >= 0 && l.right <= Math.min(l.width, l.barX), JSON.stringify(l));
      // One time scale: every timeline draws the same number of pixels per millisecond.
      t.is(await page.locator("section.config").count(), 2);
      const scales = (await page.evaluate(`[...document.querySelectorAll("svg.timeline")].map((svg) => ({
        ranks: Number(svg.dataset.ranks),
        rows: svg.querySelectorAll("g.rank").length,
        busy: svg.querySelectorAll("g.busy rect").length,
        pxPerMs: svg.querySelector("rect.idle").width.baseVal.value / Number(svg.dataset.spanMs),
      }))`)) as { ranks: number; rows: number; busy: number; pxPerMs: number }[];
      t.deepEqual(
        scales.map((s) => s.ranks),
        [1, 2, 1, 2],
      );
      for (const s of scales) {
        t.is(s.rows, s.ranks);
        t.true(s.busy > 0);
        t.true(Math.abs(s.pxPerMs / (scales[0]?.pxPerMs ?? 0) - 1) < 0.01, JSON.stringify(scales));
      }

      await page.goto(`file://${join(dir, "disagree.html")}`);
      const banner = page.locator("#disagreement.banner.bad");
      t.true(await banner.isVisible());
      t.regex(
        (await banner.textContent()) ?? "",
        /Results DISAGREE:.*2 different rank-0 result lines \(differing keys: total\)/,
      );
      const bannerY = (await banner.boundingBox())?.y ?? Infinity;
      t.true(bannerY < ((await page.locator("table.results").boundingBox())?.y ?? 0));
      t.is(await page.locator(".fastest, .badge").count(), 0);
      t.is(await page.locator("svg.efficiency").count(), 0);
      t.deepEqual(errors, []);
    } finally {
      await pw.close();
    }
  });
}
