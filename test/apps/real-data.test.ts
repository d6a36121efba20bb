/**
 * Checks on the public data sets in ../shared/data (see its README), skipped when that folder is absent
 * (a fresh clone has only generated inputs).
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import test from "ava";
import { readYuv } from "../../apps/block-matching/frames.ts";
import { formatMatchJson, matchSequence } from "../../apps/block-matching/output.ts";
import { checkDistances, dijkstra, moore } from "../../apps/shortest-paths/dijkstra.ts";
import { readDimacs } from "../../apps/shortest-paths/dimacs.ts";
import { blockRange } from "../../apps/shortest-paths/graph.ts";
import { summarize } from "../../apps/shortest-paths/summary.ts";

function dataFile(path: string): { path: string; present: boolean } {
  const p = fileURLToPath(new URL(`../../../shared/data/${path}`, import.meta.url));
  return { path: p, present: existsSync(p) };
}

const rome = dataFile("graphs/rome99.gr");
const de = dataFile("graphs/DE.gr");
const foreman = dataFile("video/foreman_qcif_10frames.yuv");

(rome.present ? test : test.skip)("rome99, directed, source 1: reference distances", async (t) => {
  const g = await readDimacs(rome.path);
  t.is(g.targets.length, 8870);
  const d = dijkstra(g, 0);
  t.deepEqual(summarize(d, 0, g.targets.length), {
    vertices: 3353,
    arcs: 8870,
    source: 1,
    reachable: 3353,
    sum: 116006476,
    max: 69102,
  });
  t.is(d[3352], 30305);
  t.deepEqual(moore(g, 0), d);
  t.is(checkDistances(g, d, 0), undefined);
});

(rome.present ? test : test.skip)("rome99, undirected: dist(1 -> 3353) = 30290", async (t) => {
  const g = await readDimacs(rome.path, { undirected: true });
  const d = dijkstra(g, 0);
  t.is(d[3352], 30290);
  t.deepEqual(moore(g, 0), d);
});

(de.present ? test : test.skip)("DE, directed, source 1: reference distances", async (t) => {
  const g = await readDimacs(de.path);
  const d = dijkstra(g, 0);
  t.is(d[49108], 69204);
  t.deepEqual(summarize(d, 0, g.targets.length), {
    vertices: 49109,
    arcs: 121024,
    source: 1,
    reachable: 48812,
    sum: 3190694892,
    max: 106005,
  });
  t.deepEqual(moore(g, 0), d);
  t.is(checkDistances(g, d, 0), undefined);
  const u = await readDimacs(de.path, { undirected: true });
  t.is(dijkstra(u, 0)[49108], 69204);
});

(de.present ? test : test.skip)("DE loaded in 3 ranges holds exactly the arcs of the whole graph", async (t) => {
  const whole = await readDimacs(de.path);
  let arcs = 0;
  for (let r = 0; r < 3; r++) {
    const g = await readDimacs(de.path, { range: (n) => blockRange(n, 3, r) });
    t.is(g.n, 49109);
    for (let v = g.lo; v < g.hi; v++) {
      const a = whole.offsets[v]!;
      const b = whole.offsets[v + 1]!;
      t.is(g.offsets[v - g.lo + 1]! - g.offsets[v - g.lo]!, b - a);
      const lo = g.offsets[v - g.lo]!;
      for (let e = 0; e < b - a; e++) {
        if (g.targets[lo + e] !== whole.targets[a + e] || g.weights[lo + e] !== whole.weights[a + e]) {
          t.fail(`vertex ${v} arc ${e} differs`);
          return;
        }
      }
    }
    arcs += g.targets.length;
  }
  t.is(arcs, 121024);
});

(foreman.present ? test : test.skip)("Foreman QCIF: block matching runs and is deterministic", async (t) => {
  const frames = await readYuv(foreman.path, 176, 144);
  t.is(frames.length, 10);
  const a = matchSequence(frames, 16, 8);
  t.is(a.frames.length, 9);
  for (const f of a.frames) t.is(f.vectors.length, 11 * 9);
  for (const f of a.frames) for (const v of f.vectors) t.true(Math.abs(v.dx) <= 8 && Math.abs(v.dy) <= 8);
  const again = matchSequence(await readYuv(foreman.path, 176, 144), 16, 8, { earlyExit: false });
  t.is(formatMatchJson(again), formatMatchJson(a));
});
