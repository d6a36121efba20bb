/** What a UTS search finds: the tree's size, its leaves and its depth (the deepest node's; the root is at 0). */
export interface Counts {
  readonly nodes: number;
  readonly leaves: number;
  readonly depth: number;
}

/** The first difference between `got` and `expected` (a field expected leaves undefined is not compared). */
export function countsMismatch(got: Counts, expected: Partial<Counts>): string | undefined {
  for (const key of ["nodes", "leaves", "depth"] as const) {
    const want = expected[key];
    if (want !== undefined && got[key] !== want) return `${key} ${got[key]}, expected ${want}`;
  }
  return undefined;
}

/** `4130071 nodes, 3305118 leaves, depth 10`. */
export function formatCounts(c: Partial<Counts>): string {
  const parts: string[] = [];
  if (c.nodes !== undefined) parts.push(`${c.nodes} nodes`);
  if (c.leaves !== undefined) parts.push(`${c.leaves} leaves`);
  if (c.depth !== undefined) parts.push(`depth ${c.depth}`);
  return parts.join(", ");
}
