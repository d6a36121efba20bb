import type { Agreement, CompareOutcome, Row } from "./types.ts";
import { metricCells, metricHeads } from "./cells.ts";
import { barChart, efficiencyCharts, esc, timelines } from "./report-charts.ts";

/**
 * The `workpool compare --report` page: one self-contained HTML file (inline CSS and SVG, no scripts, no
 * network). At the top, whether the runs' results agree (a disagreement in red, and then no configuration is
 * marked fastest) and what failed; then the results table, efficiency against ranks when several rank counts
 * were run, a bar chart of wall time, and per-rank timelines from each configuration's first run, all on one
 * time scale. Charts name configurations shortly (`dist recv/random/token`); the full spec is in the table
 * and in every chart's tooltip.
 */

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

function agreementBanner(a: Agreement): string {
  switch (a.kind) {
    case "disagree": {
      const lines = a.lines
        .map(
          (l) =>
            `<li><code class="line">${esc(l.line)}</code><br>from ${plural(l.runs.length, "run")}: ${esc(l.runs.join(", "))}</li>`,
        )
        .join("");
      const ignored = a.ignored.length > 0 ? ` Keys ignored: ${esc(a.ignored.join(", "))}.` : "";
      return (
        `<div id="disagreement" class="banner bad"><strong>Results DISAGREE:</strong> the runs printed ` +
        `${a.lines.length} different rank-0 result lines` +
        (a.differing.length > 0 ? ` (differing keys: <code>${esc(a.differing.join(", "))}</code>)` : "") +
        `, so no configuration is marked fastest: a faster wrong ` +
        `answer is not a win. If a differing key is a timing, leave it out with <code>--ignore KEY</code>.${ignored}` +
        `<ul>${lines}</ul></div>`
      );
    }
    case "agree":
      return (
        `<div id="agreement" class="banner good">${a.runs === 1 ? "Results checked: the one run printed a rank-0 result line" : `Results agree: all ${a.runs} runs printed the same rank-0 result line`}` +
        `${a.ignored.length > 0 ? ` (keys ignored: ${esc(a.ignored.join(", "))})` : ""}.</div>`
      );
    case "unchecked":
      return `<div id="agreement" class="banner warn">Results not checked: rank 0 printed no JSON result line (pass the app's <code>--json</code> flag).</div>`;
    case "none":
      return `<div id="agreement" class="banner warn">Results not checked: no run finished.</div>`;
  }
}

function resultsTable(rows: readonly Row[]): string {
  const speedups = rows.some((r) => r.speedup !== undefined);
  const body = rows.map((r, i) => {
    const first = i === 0 || rows[i - 1]?.spec !== r.spec;
    const span = rows.filter((x) => x.spec === r.spec).length;
    const config = first
      ? `<td class="config" rowspan="${span}" title="${esc(r.spec)}"><span class="label">${esc(r.label)}</span><br><code class="spec">${esc(r.spec).replace(/,/g, ",<wbr>")}</code></td>`
      : "";
    const cells = metricCells(r, speedups);
    // The fastest at its rank count: a badge beside the rank count (the row is shaded too).
    if (r.fastest) cells[0] = `<span class="badge" title="fastest at ${plural(r.np, "rank")}">fastest</span> ${r.np}`;
    return `<tr class="${first ? "first" : ""}${r.fastest ? " fastest" : ""}" data-config="${esc(r.spec)}" data-ranks="${r.np}">${config}${cells.map((c) => `<td>${c}</td>`).join("")}</tr>`;
  });
  const head = ["configuration", ...metricHeads(speedups, "termination ms")];
  return (
    `<table class="results"><thead><tr>${head.map((h) => `<th>${h}</th>`).join("")}</tr></thead>\n` +
    `<tbody>\n${body.join("\n")}\n</tbody></table>`
  );
}

export function renderReport(outcome: CompareOutcome): string {
  const { options: opts, configs, rows, baseline, baselineFailed, agreement } = outcome;
  const sweep = opts.ranks.length > 1;
  const failures = [
    ...(baselineFailed !== undefined
      ? [`baseline <code>${esc(opts.baseline ?? "")}</code>: ${esc(baselineFailed)}`]
      : []),
    ...configs.filter((c) => c.failed).map((c) => `${esc(c.spec)} at ${c.np} ranks: ${esc(c.failed ?? "")}`),
  ];
  const failed =
    failures.length > 0
      ? `<div id="failures" class="banner bad"><strong>Failed:</strong><ul>${failures.map((f) => `<li>${f}</li>`).join("")}</ul></div>`
      : "";
  const baselineText = baseline
    ? `<p>Baseline <code>${esc(baseline.command)}</code>: ${baseline.seconds.toFixed(3)} s, the median of ${plural(baseline.runsS.length, "run")} ` +
      `(${baseline.source === "json" ? "the <code>seconds</code> of its JSON line" : "its wall time, start-up included"}). ` +
      "Speedup = baseline / wall time, each run against the baseline run of its round; efficiency = speedup / ranks.</p>"
    : "";
  const labels = new Map(rows.map((r) => [r.spec, r.label]));
  const title = `workpool compare: ${opts.app}`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 2em; color: #222; }
p, .banner { max-width: 1100px; }
code { font: 12px ui-monospace, monospace; } code.spec { color: #666; font-size: 11px; font-weight: normal; }
.banner { padding: 0.6em 1em; margin: 1em 0; border-radius: 4px; border: 1px solid; }
.banner.bad { background: #fdecea; border-color: #d93025; color: #611a15; }
.banner.good { background: #edf7ed; border-color: #4caf50; color: #1e4620; }
.banner.warn { background: #fff4e5; border-color: #ff9800; color: #663c00; }
.banner ul { margin: 0.5em 0 0; padding-left: 1.2em; } .banner li { margin-bottom: 0.4em; }
code.line { overflow-wrap: anywhere; }
table { border-collapse: collapse; } th, td { padding: 3px 8px; border-bottom: 1px solid #ddd; text-align: right; white-space: nowrap; }
th:first-child, td.config { text-align: left; vertical-align: top; } td.config { white-space: normal; max-width: 28em; } tr.first td { border-top: 1px solid #bbb; }
td.config .label { font-weight: 600; white-space: nowrap; } tr.fastest td:not(.config) { font-weight: bold; background: #eef8ee; }
.badge { background: #3a9a4a; color: white; border-radius: 3px; padding: 0 5px; font-size: 11px; font-weight: normal; }
svg text { font: 11px system-ui, sans-serif; fill: #333; } svg text.chart-title { font-size: 12px; font-weight: 600; }
rect.bar { fill: #6a8fc8; } rect.bar.fastest { fill: #3a9a4a; } line.range { stroke: #222; stroke-width: 1; }
line.grid { stroke: #e4e4e4; } line.ideal { stroke: #999; stroke-dasharray: 4 3; } line.end { stroke: #222; }
rect.idle { fill: #ececec; } g.busy rect { fill: #2f6fbf; }
polyline.efficiency { fill: none; stroke: #2f6fbf; stroke-width: 2; } g.point circle { fill: #2f6fbf; }
.efficiency-charts { display: flex; flex-wrap: wrap; gap: 12px; }
section.config h3 { margin: 1.2em 0 0.2em; font-size: 14px; } p.run { margin: 0.3em 0; color: #555; font-size: 12px; }
p.note { color: #555; }
</style></head><body>
<h1>workpool compare</h1>
<p>App <code>${esc(`${opts.app} ${opts.args.join(" ")}`.trim())}</code> at ${sweep ? `${opts.ranks.join(", ")} ranks` : plural(opts.ranks[0] ?? 0, "rank")}, ${plural(opts.repeat, "run")} per configuration${opts.baseline !== undefined ? " and baseline" : ""},
interleaved round robin (each round runs ${opts.baseline !== undefined ? "the baseline and " : ""}every configuration once), so that load drifting during the compare
widens a figure's spread instead of favouring one configuration. Each figure is the median over the runs, with (min..max) when the runs differ.
Wall time is the time spent in pool runs (slowest rank); busy is busy time / (ranks &times; wall).</p>
${agreementBanner(agreement)}
${failed}
${baselineText}
<h2>Results</h2>
${resultsTable(rows)}
${sweep ? `<h2>Efficiency against ranks</h2>\n${efficiencyCharts(rows, opts.ranks, opts.pools)}` : ""}
<h2>Wall time per configuration</h2>
<p class="note">Bars: median; line: min to max${agreement.kind === "disagree" ? "" : "; green: fastest at its rank count"}.</p>
${barChart(rows, sweep)}
<h2>Per-rank timelines</h2>
<p class="note">First run of each configuration; dark = busy, light = idle. All timelines share one time scale.</p>
${timelines(configs, labels)}
</body></html>
`;
}
