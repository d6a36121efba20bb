import test from "ava";
import { InputError } from "../../apps/common/errors.ts";
import { formatDimacs, parseDimacs, readDimacs } from "../../apps/shortest-paths/dimacs.ts";
import { generateArcs, parseGraphSpec } from "../../apps/shortest-paths/generate.ts";
import { blockRange, buildGraph, type Graph } from "../../apps/shortest-paths/graph.ts";
import { tempFile } from "./temp.ts";

const SMALL = `c a small graph
c
p sp 4 5
a 1 2 7
a 1 3 2
c a comment between arcs
a 3 2 3
a 2 4 1
a 4 1 10
`;

/** Out-arcs of every vertex as sorted "u->v:w" strings, for comparing graphs. */
function arcsOf(g: Graph): string[] {
  const out: string[] = [];
  for (let u = g.lo; u < g.hi; u++) {
    for (let e = g.offsets[u - g.lo]!; e < g.offsets[u - g.lo + 1]!; e++)
      out.push(`${u}->${g.targets[e]}:${g.weights[e]}`);
  }
  return out.sort();
}

test("parses a small file into a 0-based CSR graph", async (t) => {
  const g = await readDimacs(tempFile(t, "small.gr", SMALL));
  t.is(g.n, 4);
  t.is(g.lo, 0);
  t.is(g.hi, 4);
  t.deepEqual([...g.offsets], [0, 2, 3, 4, 5]);
  // Arcs of a vertex keep file order.
  t.deepEqual([...g.targets], [1, 2, 3, 1, 0]);
  t.deepEqual([...g.weights], [7, 2, 1, 3, 10]);
});

test("undirected adds each arc reversed", async (t) => {
  const g = await readDimacs(tempFile(t, "small.gr", SMALL), { undirected: true });
  t.is(g.targets.length, 10);
  t.deepEqual(arcsOf(g), [
    "0->1:7",
    "0->2:2",
    "0->3:10",
    "1->0:7",
    "1->2:3",
    "1->3:1",
    "2->0:2",
    "2->1:3",
    "3->0:10",
    "3->1:1",
  ]);
});

test("accepts CRLF, blank lines, tabs, and no final newline", (t) => {
  const text = "c x\r\n\r\np sp 3 2\r\n  \r\na\t1\t2\t5 \r\n\na 2 3 0";
  const g = parseDimacs(text);
  t.deepEqual(arcsOf(g), ["0->1:5", "1->2:0"]);
});

test("tiny read chunks (lines across chunks, a line longer than the buffer) give the same graph", async (t) => {
  const arcs = generateArcs(parseGraphSpec("random:300,1200"), 5);
  const text = formatDimacs(300, arcs, ["x".repeat(500), "generated"]);
  const path = tempFile(t, "r.gr", text);
  const big = await readDimacs(path);
  for (const chunk of [64, 100, 4096]) {
    const small = await readDimacs(path, {}, chunk);
    t.deepEqual(small, big);
  }
  t.deepEqual(big, buildGraph(300, arcs));
});

test("a range keeps only the out-arcs of [lo, hi), and the ranges together make the whole graph", async (t) => {
  const arcs = generateArcs(parseGraphSpec("random:101,500"), 9);
  const path = tempFile(t, "r.gr", formatDimacs(101, arcs));
  for (const undirected of [false, true]) {
    const whole = await readDimacs(path, { undirected });
    const parts: string[] = [];
    for (let r = 0; r < 4; r++) {
      const g = await readDimacs(path, { undirected, range: (n) => blockRange(n, 4, r) });
      t.is(g.n, 101);
      t.deepEqual([g.lo, g.hi], blockRange(101, 4, r));
      t.is(g.offsets.length, g.hi - g.lo + 1);
      parts.push(...arcsOf(g));
    }
    t.deepEqual(parts.sort(), arcsOf(whole));
  }
  const fixed = await readDimacs(path, { range: [10, 20] });
  t.deepEqual([fixed.lo, fixed.hi], [10, 20]);
});

/** Writes `text` to a temp file, expects readDimacs to reject naming the file, `line`, and `what`. */
async function rejects(t: import("ava").ExecutionContext, text: string, line: number | undefined, what: RegExp) {
  const path = tempFile(t, "bad.gr", text);
  const err = await t.throwsAsync(readDimacs(path), { instanceOf: InputError });
  t.is(err?.file, path);
  t.is(err?.line, line);
  t.true(err?.message.startsWith(line === undefined ? `${path}: ` : `${path}:${line}: `), err?.message);
  t.regex(err?.message ?? "", what);
  // The in-memory parser reports the same.
  const err2 = t.throws(() => parseDimacs(text, {}, "mem.gr"), { instanceOf: InputError });
  t.is(err2?.line, line);
}

test("error: arc line before the p line", (t) =>
  rejects(t, "c\na 1 2 3\np sp 2 1\n", 2, /arc line before the `p sp N M` line: `a 1 2 3`/));
test("error: no p line", (t) => rejects(t, "c only comments\n", undefined, /no `p sp N M` line/));
test("error: empty file", (t) => rejects(t, "", undefined, /no `p sp N M` line/));
test("error: duplicate p line", (t) =>
  rejects(t, "p sp 2 1\na 1 2 3\np sp 2 1\n", 3, /duplicate p line \(first at line 1\)/));
test("error: tail out of range", (t) => rejects(t, "p sp 2 1\na 0 2 3\n", 2, /arc tail 0 out of range 1\.\.2/));
test("error: head out of range", (t) => rejects(t, "p sp 2 1\na 1 3 3\n", 2, /arc head 3 out of range 1\.\.2/));
test("error: negative weight", (t) => rejects(t, "p sp 2 1\na 1 2 -4\n", 2, /negative weight -4/));
test("error: weight too large", (t) => rejects(t, "p sp 2 1\na 1 2 99999999999\n", 2, /weight 99999999999 larger/));
test("error: fewer arcs than the p line says", (t) =>
  rejects(t, "p sp 3 3\na 1 2 3\na 2 3 1\n", 1, /the p line declares 3 arcs but the file has 2 arc lines/));
test("error: more arcs than the p line says", (t) =>
  rejects(t, "c\np sp 3 1\na 1 2 3\na 2 3 1\n", 2, /declares 1 arcs but the file has 2 arc lines/));
test("error: missing weight", (t) => rejects(t, "p sp 2 1\na 1 2\n", 2, /malformed arc line.*: `a 1 2`/));
test("error: non-integer weight", (t) => rejects(t, "p sp 2 1\na 1 2 1.5\n", 2, /malformed arc line/));
test("error: extra field", (t) => rejects(t, "p sp 2 1\na 1 2 1 4\n", 2, /malformed arc line/));
test("error: no blank after a", (t) => rejects(t, "p sp 2 1\na1 2 1\n", 2, /malformed arc line/));
test("error: a vertex that is not a number", (t) => rejects(t, "p sp 2 1\na - 2 1\n", 2, /malformed arc line/));
test("error: malformed p line", (t) => rejects(t, "p sp 3\n", 1, /malformed p line/));
test("error: p line of another problem", (t) => rejects(t, "p max 3 2\n", 1, /malformed p line/));
test("error: zero vertices", (t) => rejects(t, "p sp 0 0\n", 1, /vertex count 0 out of range/));
test("error: unknown line type", (t) => rejects(t, "p sp 2 0\nx 1 2\n", 2, /unknown line type/));

test("error: a range outside the graph names the file", async (t) => {
  const path = tempFile(t, "small.gr", SMALL);
  const err = await t.throwsAsync(readDimacs(path, { range: [2, 9] }), { instanceOf: InputError });
  t.regex(err?.message ?? "", /small\.gr: vertex range \[2, 9\) is not inside \[0, 4\)/);
});

test("a missing file rejects with the file system error", async (t) => {
  const err = await t.throwsAsync(readDimacs("/nonexistent/x.gr"));
  t.is((err as NodeJS.ErrnoException).code, "ENOENT");
});
