/**
 * The hand-written SVG charts of the `workpool compare` report: wall time per configuration, parallel
 * efficiency against ranks, and per-rank busy/idle timelines drawn on one time scale.
 */
import { existsSync, readFileSync } from "node:fs";
import type { ConfigSummary, Row } from "./types.ts";

export const esc = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

const WIDTH = 900;
/** Width of a label in the report's 11px sans-serif, over-estimated so that no label is cut. */
const textWidth = (s: string, px = 11) => Math.ceil(s.length * px * 0.62);

/** Round tick values from 0 to the first one at or above `max`, about `count` of them. */
function ticks(max: number, count: number): number[] {
  const raw = max / count;
  const step10 = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * step10).find((s) => s >= raw) ?? raw;
  const out = [0];
  while ((out.at(-1) as number) < max * (1 - 1e-9)) out.push(Number((out.length * step).toPrecision(12)));
  return out;
}

const fmtSeconds = (s: number, max: number) =>
  max < 1 ? `${Number((s * 1000).toPrecision(3))} ms` : `${Number(s.toPrecision(3))} s`;

/** One bar per (configuration, ranks): the median, a line from min to max; configurations labelled once. */
export function barChart(rows: readonly Row[], sweep: boolean): string {
  if (rows.length === 0) return "<p>No configuration finished.</p>";
  const barH = 18;
  const gap = 4;
  const label = Math.max(...rows.map((r) => textWidth(r.label))) + 12;
  const nCol = sweep ? 44 : 0;
  const x0 = label + nCol;
  const right = 110;
  const top = Math.max(...rows.map((r) => r.maxS), 1e-9);
  const axis = ticks(top, 6);
  const max = axis.at(-1) as number;
  const width = Math.max(WIDTH, x0 + 300 + right);
  const scale = (width - x0 - right) / max;
  const parts: string[] = [];
  let y = 0;
  rows.forEach((r, i) => {
    const first = i === 0 || rows[i - 1]?.spec !== r.spec;
    if (first && i > 0) y += 8;
    const w = Math.max(1, r.medianS * scale);
    const title = `${r.spec}, ${r.np} ranks: median ${r.medianS.toFixed(3)} s (min ${r.minS.toFixed(3)}, max ${r.maxS.toFixed(3)})`;
    parts.push(
      `<g class="bar-row" data-config="${esc(r.spec)}" data-ranks="${r.np}"><title>${esc(title)}</title>` +
        (first ? `<text class="label" x="${label - 8}" y="${y + 13}" text-anchor="end">${esc(r.label)}</text>` : "") +
        (sweep ? `<text class="n" x="${x0 - 6}" y="${y + 13}" text-anchor="end">n=${r.np}</text>` : "") +
        `<rect class="bar${r.fastest ? " fastest" : ""}" x="${x0}" y="${y}" width="${w.toFixed(1)}" height="${barH}"/>` +
        `<line class="range" x1="${(x0 + r.minS * scale).toFixed(1)}" x2="${(x0 + r.maxS * scale).toFixed(1)}" y1="${y + barH / 2}" y2="${y + barH / 2}"/>` +
        `<text x="${(x0 + Math.max(w, r.maxS * scale) + 6).toFixed(1)}" y="${y + 13}">${r.medianS.toFixed(3)} s${r.fastest ? " fastest" : ""}</text></g>`,
    );
    y += barH + gap;
  });
  const grid = axis
    .map((v) => {
      const x = (x0 + v * scale).toFixed(1);
      return `<line class="grid" x1="${x}" x2="${x}" y1="0" y2="${y}"/><text x="${x}" y="${y + 14}" text-anchor="middle">${fmtSeconds(v, max)}</text>`;
    })
    .join("");
  const h = y + 20;
  return `<svg id="wall-chart" width="${width}" height="${h}" viewBox="0 0 ${width} ${h}">${grid}${parts.join("")}</svg>`;
}

/**
 * Efficiency against ranks, one small chart per configuration, all on the same axes. With a baseline:
 * speedup / ranks. Without: relative to the configuration's smallest rank count n0, T(n0) n0 / (T(n) n).
 */
export function efficiencyCharts(rows: readonly Row[], ranks: readonly number[], pools: readonly string[]): string {
  const baseline = rows.some((r) => r.efficiency !== undefined);
  const series = pools
    .map((spec) => {
      const mine = rows.filter((r) => r.spec === spec).sort((a, b) => a.np - b.np);
      const first = mine[0];
      const points = mine.map((r) => ({
        np: r.np,
        eff: baseline
          ? (r.efficiency ?? 0)
          : first && r.medianS > 0
            ? (first.medianS * first.np) / (r.medianS * r.np)
            : 0,
        row: r,
      }));
      return { spec, label: first?.label ?? spec, points };
    })
    .filter((s) => s.points.length > 0);
  if (series.length === 0) return "<p>No configuration finished.</p>";
  const top = (p: { eff: number; row: Row }) => Math.max(p.eff, baseline ? (p.row.spread.efficiency?.max ?? 0) : 0);
  const yTicks = ticks(Math.max(1, ...series.flatMap((s) => s.points.map(top))), 4);
  const yMax = yTicks.at(-1) as number;
  const lo = Math.log(ranks[0] as number);
  const hi = Math.log(ranks.at(-1) as number);
  const ml = 42;
  const mr = 16;
  const mt = 40;
  const mb = 34;
  const ph = 130;
  const charts = series.map((s) => {
    const w = Math.max(300, textWidth(s.label, 12) + 20);
    const pw = w - ml - mr;
    const pad = 18;
    const x = (n: number) => ml + pad + (hi > lo ? ((Math.log(n) - lo) / (hi - lo)) * (pw - 2 * pad) : pw / 2 - pad);
    const y = (e: number) => mt + ph - (e / yMax) * ph;
    const parts: string[] = [`<title>${esc(s.spec)}</title>`];
    parts.push(`<text class="label chart-title" x="${ml}" y="16">${esc(s.label)}</text>`);
    for (const v of yTicks) {
      parts.push(
        `<line class="${v === 1 ? "ideal" : "grid"}" x1="${ml}" x2="${ml + pw}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}"/>` +
          `<text x="${ml - 4}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${Math.round(v * 100)}%</text>`,
      );
    }
    for (const n of ranks) {
      parts.push(`<text x="${x(n).toFixed(1)}" y="${mt + ph + 14}" text-anchor="middle">${n}</text>`);
    }
    parts.push(`<text x="${ml + pw / 2}" y="${mt + ph + 29}" text-anchor="middle">ranks</text>`);
    const pts = s.points.map((p) => `${x(p.np).toFixed(1)},${y(p.eff).toFixed(1)}`).join(" ");
    parts.push(`<polyline class="efficiency" points="${pts}"/>`);
    for (const p of s.points) {
      const speedup = p.row.speedup === undefined ? "" : `, speedup ${p.row.speedup.toFixed(2)}`;
      // With a baseline, the efficiency's range over the runs: a vertical line from min to max.
      const e = baseline ? p.row.spread.efficiency : undefined;
      const range = e && e.max > e.min ? ` (runs: ${Math.round(e.min * 100)}% to ${Math.round(e.max * 100)}%)` : "";
      if (e && e.max > e.min) {
        parts.push(
          `<line class="range" x1="${x(p.np).toFixed(1)}" x2="${x(p.np).toFixed(1)}" y1="${y(e.min).toFixed(1)}" y2="${y(e.max).toFixed(1)}"/>`,
        );
      }
      parts.push(
        `<g class="point" data-ranks="${p.np}"><title>${p.np} ranks: efficiency ${Math.round(p.eff * 100)}%${range}${speedup}, median ${p.row.medianS.toFixed(3)} s</title>` +
          `<circle cx="${x(p.np).toFixed(1)}" cy="${y(p.eff).toFixed(1)}" r="3.5"/>` +
          `<text x="${x(p.np).toFixed(1)}" y="${(y(p.eff) - 7).toFixed(1)}" text-anchor="middle">${Math.round(p.eff * 100)}%</text></g>`,
      );
    }
    const h = mt + ph + mb;
    return `<svg class="efficiency" data-config="${esc(s.spec)}" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}">${parts.join("")}</svg>`;
  });
  const what = baseline
    ? "Parallel efficiency = speedup / ranks, speedup = baseline time / wall time, each run against the baseline " +
      "run of its round; the point is the median, the vertical line the range over the runs."
    : "No --baseline given: efficiency relative to each configuration's smallest rank count n0, " +
      "T(n0) &times; n0 / (T(n) &times; n), where T is the median wall time.";
  return `<p class="note">${what} The dashed line is 100%.</p><div class="efficiency-charts">${charts.join("")}</div>`;
}

interface Span {
  ts: number;
  dur: number;
  pid: number;
  name: string;
  ph: string;
}

interface Trace {
  readonly spans: Span[];
  readonly t0: number;
  /** Microseconds from the first span's start to the last one's end. */
  readonly span: number;
}

function loadTrace(path: string | undefined): Trace | string {
  if (!path || !existsSync(path)) return "No trace recorded for this configuration.";
  const events = (JSON.parse(readFileSync(path, "utf8")) as { traceEvents: Span[] }).traceEvents;
  const spans = events.filter((e) => e.ph === "X");
  if (spans.length === 0) return "The trace holds no spans.";
  let t0 = Infinity;
  let t1 = -Infinity;
  for (const e of spans) {
    t0 = Math.min(t0, e.ts);
    t1 = Math.max(t1, e.ts + e.dur);
  }
  return { spans, t0, span: Math.max(1, t1 - t0) };
}

const BUCKETS = 300;

/** Busy fraction per time bucket and rank; `bucket` microseconds each. */
function busyBuckets(trace: Trace, np: number, bucket: number): Float64Array[] {
  const n = Math.ceil(trace.span / bucket);
  const busy = Array.from({ length: np }, () => new Float64Array(n));
  for (const e of trace.spans) {
    const row = busy[e.pid];
    if ((e.name !== "task" && e.name !== "tasks") || !row) continue;
    let a = (e.ts - trace.t0) / bucket;
    const b = (e.ts + e.dur - trace.t0) / bucket;
    while (a < b) {
      const k = Math.min(n - 1, Math.floor(a));
      const end = Math.min(b, k + 1);
      row[k] = (row[k] ?? 0) + (end - a);
      a = end;
    }
  }
  return busy;
}

/**
 * Per configuration and rank count, the first run's busy (dark) and idle (light) time per rank, all drawn on
 * one time scale: a run twice as long is twice as wide.
 */
export function timelines(configs: readonly ConfigSummary[], labels: ReadonlyMap<string, string>): string {
  const shown = configs.filter((c) => c.runs.length > 0);
  const traces = new Map(shown.map((c) => [c, loadTrace(c.tracePath)] as const));
  const loaded = [...traces.values()].filter((t): t is Trace => typeof t !== "string");
  const maxSpan = Math.max(1, ...loaded.map((t) => t.span));
  const axis = ticks(maxSpan / 1000, 8);
  const axisMax = (axis.at(-1) as number) * 1000;
  const bucket = axisMax / BUCKETS;
  const maxNp = Math.max(1, ...shown.map((c) => c.np));
  const rowH = maxNp > 64 ? 4 : maxNp > 16 ? 8 : 16;
  const label = 56;
  const bw = (WIDTH - label - 10) / BUCKETS;
  const sections = new Map<string, string[]>();
  for (const c of shown) {
    const t = traces.get(c) as Trace | string;
    let body: string;
    if (typeof t === "string") body = `<p>${esc(t)}</p>`;
    else {
      const busy = busyBuckets(t, c.np, bucket);
      const runW = (t.span / bucket) * bw;
      const parts: string[] = [];
      for (let r = 0; r < c.np; r++) {
        const y = r * rowH;
        const cells: string[] = [];
        (busy[r] as Float64Array).forEach((f, k) => {
          if (f <= 0.01) return;
          cells.push(
            `<rect x="${(label + k * bw).toFixed(1)}" y="${y}" width="${bw.toFixed(2)}" height="${rowH - 1}" fill-opacity="${Math.min(1, f).toFixed(2)}"/>`,
          );
        });
        parts.push(
          `<g class="rank" data-rank="${r}"><rect class="idle" x="${label}" y="${y}" width="${runW.toFixed(1)}" height="${rowH - 1}"/>` +
            `<g class="busy">${cells.join("")}</g>` +
            (rowH >= 8 ? `<text x="0" y="${y + rowH - 3}">rank ${r}</text>` : "") +
            "</g>",
        );
      }
      const h = c.np * rowH;
      const grid = axis
        .map((v) => {
          const x = (label + ((v * 1000) / bucket) * bw).toFixed(1);
          return `<line class="grid" x1="${x}" x2="${x}" y1="0" y2="${h + 3}"/><text x="${x}" y="${h + 15}" text-anchor="middle">${fmtSeconds(v / 1000, axisMax / 1e6)}</text>`;
        })
        .join("");
      const endX = label + runW;
      const end = `<line class="end" x1="${endX.toFixed(1)}" x2="${endX.toFixed(1)}" y1="0" y2="${h}"/>`;
      body =
        `<p class="run">${c.np} rank${c.np === 1 ? "" : "s"}: ${(t.span / 1000).toFixed(1)} ms from the first span to the last</p>` +
        `<svg class="timeline" data-ranks="${c.np}" data-span-ms="${(t.span / 1000).toFixed(3)}" width="${WIDTH + 20}" height="${h + 20}" viewBox="0 0 ${WIDTH + 20} ${h + 20}">${grid}${parts.join("")}${end}</svg>`;
    }
    sections.set(c.spec, [
      ...(sections.get(c.spec) ?? []),
      `<div class="timeline-run" data-ranks="${c.np}">${body}</div>`,
    ]);
  }
  return [...sections]
    .map(
      ([spec, bodies]) =>
        `<section class="config" data-config="${esc(spec)}"><h3>${esc(labels.get(spec) ?? spec)} <code class="spec">${esc(spec)}</code></h3>${bodies.join("")}</section>`,
    )
    .join("\n");
}
