/**
 * The module graph of lib/ and launcher/ has no cycle, type-only imports included: layers point down
 * (ESLint's no-restricted-imports keeps lib/comm from importing lib/pool, and the launcher from deep imports;
 * this keeps every folder free of circles).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import test from "ava";
import { ROOT } from "../helpers/run.ts";

const IMPORT = /^(?:import|export)\s[^;]*?\sfrom\s+"(\.[^"]+)"/gms;

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sources(path, out);
    else if (path.endsWith(".ts")) out.push(path);
  }
  return out;
}

/** Strongly connected components of more than one file (Tarjan), each a cycle of imports. */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component);
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

test("lib/ and launcher/ import each other without a cycle", (t) => {
  const graph = new Map<string, string[]>();
  for (const file of [...sources(join(ROOT, "lib")), ...sources(join(ROOT, "launcher"))]) {
    const text = readFileSync(file, "utf8");
    graph.set(
      file,
      [...text.matchAll(IMPORT)].map((m) => resolve(dirname(file), m[1] as string)),
    );
  }
  t.true(graph.size > 50, `read ${graph.size} files`);
  const found = cycles(graph).map((c) => c.map((f) => relative(ROOT, f)).join(" -> "));
  t.deepEqual(found, []);
});

test("the cycle finder finds a cycle", (t) => {
  const g = new Map([
    ["a", ["b"]],
    ["b", ["c"]],
    ["c", ["a"]],
    ["d", ["a"]],
  ]);
  t.deepEqual(
    cycles(g).map((c) => [...c].sort()),
    [["a", "b", "c"]],
  );
});
