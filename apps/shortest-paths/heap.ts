/**
 * A binary min-heap of (vertex, distance) pairs on typed arrays, with lazy deletion: a vertex may be pushed
 * again with a smaller distance, and stale entries are skipped by the caller (distance > best known).
 */
export class VertexHeap {
  private vertices = new Int32Array(1024);
  private dists = new Float64Array(1024);
  size = 0;

  push(v: number, d: number): void {
    if (this.size === this.vertices.length) {
      const nv = new Int32Array(this.size * 2);
      nv.set(this.vertices);
      this.vertices = nv;
      const nd = new Float64Array(this.size * 2);
      nd.set(this.dists);
      this.dists = nd;
    }
    const vs = this.vertices;
    const ds = this.dists;
    let i = this.size++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (ds[p]! <= d) break;
      vs[i] = vs[p]!;
      ds[i] = ds[p]!;
      i = p;
    }
    vs[i] = v;
    ds[i] = d;
  }

  /** Distance of the top entry (Infinity when empty). */
  peek(): number {
    return this.size > 0 ? this.dists[0]! : Number.POSITIVE_INFINITY;
  }

  /** Vertex of the top entry (undefined behaviour when empty). */
  peekVertex(): number {
    return this.vertices[0]!;
  }

  /** Removes the top entry; returns its vertex (its distance was `peek()`). */
  pop(): number {
    const vs = this.vertices;
    const ds = this.dists;
    const top = vs[0]!;
    const n = --this.size;
    if (n > 0) {
      const v = vs[n]!;
      const d = ds[n]!;
      let i = 0;
      for (;;) {
        let c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && ds[c + 1]! < ds[c]!) c++;
        if (ds[c]! >= d) break;
        vs[i] = vs[c]!;
        ds[i] = ds[c]!;
        i = c;
      }
      vs[i] = v;
      ds[i] = d;
    }
    return top;
  }
}
