import { existsSync, readFileSync } from "node:fs";
import type { CompareOptions, ConfigSummary, Row } from "./compare-types.ts";

/**
 * The `workpool compare --report` page: one self-contained HTML file (inline CSS and SVG, no scripts, no
 * network) with the results table, a bar chart of wall time per configuration, and for each configuration a
 * per-rank timeline of busy and idle time taken from the first run's trace.
 */

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

interface Span {
  ts: number;
  dur: number;
  pid: number;
  name: string;
  ph: string;
}

const WIDTH = 900;
const BUCKETS = 300;

/** Busy fraction per time bucket per rank, from a trace's task spans. */
function timeline(tracePath: string | undefined, np: number): { svg: string; ranks: number } {
  if (!tracePath || !existsSync(tracePath))
    return { svg: "<p>No trace recorded for this configuration.</p>", ranks: 0 };
  const events = (JSON.parse(readFileSync(tracePath, "utf8")) as { traceEvents: Span[] }).traceEvents;
  const spans = events.filter((e) => e.ph === "X");
  if (spans.length === 0) return { svg: "<p>The trace holds no spans.</p>", ranks: 0 };
  const t0 = Math.min(...spans.map((e) => e.ts));
  const t1 = Math.max(...spans.map((e) => e.ts + e.dur));
  const span = Math.max(1, t1 - t0);
  const busy = Array.from({ length: np }, () => new Float64Array(BUCKETS));
  for (const e of spans) {
    if ((e.name !== "task" && e.name !== "tasks") || !busy[e.pid]) continue;
    const row = busy[e.pid] as Float64Array;
    let a = ((e.ts - t0) / span) * BUCKETS;
    const b = ((e.ts + e.dur - t0) / span) * BUCKETS;
    while (a < b) {
      const k = Math.min(BUCKETS - 1, Math.floor(a));
      const end = Math.min(b, k + 1);
      row[k] = (row[k] ?? 0) + (end - a);
      a = end;
    }
  }
  const rowH = np > 64 ? 4 : np > 16 ? 8 : 16;
  const label = 60;
  const bw = (WIDTH - label) / BUCKETS;
  const parts: string[] = [];
  for (let r = 0; r < np; r++) {
    const y = r * rowH;
    const cells: string[] = [];
    const row = busy[r] as Float64Array;
    for (let k = 0; k < BUCKETS; k++) {
      const f = Math.min(1, row[k] ?? 0);
      if (f <= 0.01) continue;
      cells.push(
        `<rect x="${(label + k * bw).toFixed(1)}" y="${y}" width="${bw.toFixed(2)}" height="${rowH - 1}" fill-opacity="${f.toFixed(2)}"/>`,
      );
    }
    parts.push(
      `<g class="rank" data-rank="${r}"><rect class="idle" x="${label}" y="${y}" width="${WIDTH - label}" height="${rowH - 1}"/>` +
        `<g class="busy">${cells.join("")}</g>` +
        (rowH >= 8 ? `<text x="0" y="${y + rowH - 3}">rank ${r}</text>` : "") +
        "</g>",
    );
  }
  const h = np * rowH + 20;
  const axis = `<text x="${label}" y="${h - 4}">0 ms</text><text x="${WIDTH - 4}" y="${h - 4}" text-anchor="end">${(span / 1000).toFixed(1)} ms</text>`;
  return {
    svg: `<svg class="timeline" width="${WIDTH}" height="${h}" viewBox="0 0 ${WIDTH} ${h}">${parts.join("")}${axis}</svg>`,
    ranks: np,
  };
}

function barChart(rows: readonly Row[]): string {
  const label = 380;
  const barH = 18;
  const max = Math.max(...rows.map((r) => r.maxS), 1e-9);
  const scale = (WIDTH - label - 80) / max;
  const fastest = rows.reduce((a, b) => (b.medianS < a.medianS ? b : a), rows[0] as Row);
  const bars = rows.map((r, i) => {
    const y = i * (barH + 4);
    const w = Math.max(1, r.medianS * scale);
    return (
      `<g class="bar-row" data-config="${esc(r.spec)}"><text x="${label - 6}" y="${y + 13}" text-anchor="end">${esc(r.spec)}</text>` +
      `<rect class="bar${r === fastest ? " fastest" : ""}" x="${label}" y="${y}" width="${w.toFixed(1)}" height="${barH}"/>` +
      `<line x1="${(label + r.minS * scale).toFixed(1)}" x2="${(label + r.maxS * scale).toFixed(1)}" y1="${y + barH / 2}" y2="${y + barH / 2}" class="range"/>` +
      `<text x="${(label + w + 6).toFixed(1)}" y="${y + 13}">${r.medianS.toFixed(3)} s</text></g>`
    );
  });
  const h = rows.length * (barH + 4);
  return `<svg id="wall-chart" width="${WIDTH}" height="${h}" viewBox="0 0 ${WIDTH} ${h}">${bars.join("")}</svg>`;
}

export function renderReport(opts: CompareOptions, configs: readonly ConfigSummary[], rows: readonly Row[]): string {
  const fastest = rows.reduce((a, b) => (b.medianS < a.medianS ? b : a), rows[0] as Row);
  const tableRows = rows
    .map(
      (r) =>
        `<tr${r === fastest ? ' class="fastest"' : ""}><td>${esc(r.spec)}</td><td>${r.medianS.toFixed(3)}</td><td>${r.minS.toFixed(3)}</td>` +
        `<td>${r.maxS.toFixed(3)}</td><td>${r.tasks}</td><td>${r.moved}</td><td>${r.messages}</td>` +
        `<td>${(r.idleFraction * 100).toFixed(1)}%</td><td>${(r.efficiency * 100).toFixed(1)}%</td><td>${r.terminationMs.toFixed(2)}</td></tr>`,
    )
    .join("\n");
  const timelines = configs
    .filter((c) => c.runs.length > 0)
    .map((c) => {
      const t = timeline(c.tracePath, opts.np);
      return `<section class="config" data-config="${esc(c.spec)}" data-ranks="${t.ranks}"><h3>${esc(c.spec)}</h3>${t.svg}</section>`;
    })
    .join("\n");
  const failed = configs.filter((c) => c.failed).map((c) => `<li>${esc(c.spec)}: ${esc(c.failed ?? "")}</li>`);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>workpool compare: ${esc(opts.app)}</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; } th, td { padding: 3px 8px; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child { text-align: left; } tr.fastest td { font-weight: bold; background: #eef8ee; }
svg text { font: 11px system-ui, sans-serif; fill: #333; } rect.bar { fill: #6a8fc8; } rect.bar.fastest { fill: #3a9a4a; }
line.range { stroke: #222; stroke-width: 1; } rect.idle { fill: #f1f1f1; } g.busy rect { fill: #2f6fbf; }
</style></head><body>
<h1>workpool compare</h1>
<p>App <code>${esc(opts.app)} ${esc(opts.args.join(" "))}</code> on ${opts.np} ranks, ${opts.repeat} run(s) per configuration.
Wall time is the time spent in pool runs (slowest rank); efficiency is busy time / (ranks &times; wall).</p>
<h2>Results</h2>
<table class="results"><thead><tr><th>configuration</th><th>median s</th><th>min s</th><th>max s</th><th>tasks</th><th>moved</th>
<th>pool msgs</th><th>idle</th><th>efficiency</th><th>termination ms</th></tr></thead>
<tbody>
${tableRows}
</tbody></table>
${failed.length > 0 ? `<h2>Failed</h2><ul>${failed.join("")}</ul>` : ""}
<h2>Wall time per configuration</h2>
${barChart(rows)}
<h2>Per-rank timelines (first run; dark = busy, light = idle)</h2>
${timelines}
</body></html>
`;
}
