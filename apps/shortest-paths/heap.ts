/**
 * An indexed binary min-heap of vertices 0 .. n-1 keyed by distance, on typed arrays, with decrease-key: each
 * vertex is in the heap at most once, so a pop never meets a stale entry. Sequential Dijkstra and every rank of
 * the distributed variant use this same heap, so their times compare like for like.
 */
export class IndexedHeap {
  private readonly heapV: Int32Array;
  private readonly heapK: Float64Array;
  /** Index of a vertex in the heap, -1 when it is not in it. */
  private readonly where: Int32Array;
  size = 0;

  constructor(n: number) {
    this.heapV = new Int32Array(n);
    this.heapK = new Float64Array(n);
    this.where = new Int32Array(n).fill(-1);
  }

  /** The smallest key, or Infinity when the heap is empty. */
  minKey(): number {
    return this.size > 0 ? this.heapK[0]! : Number.POSITIVE_INFINITY;
  }

  /** Inserts `v` with key `k`, or lowers its key to `k`; `k` must not be larger than a key `v` already has. */
  set(v: number, k: number): void {
    const at = this.where[v]!;
    this.siftUp(at < 0 ? this.size++ : at, v, k);
  }

  /** Removes and returns the vertex with the smallest key (its key was `minKey()`); the heap must not be empty. */
  pop(): number {
    const heapV = this.heapV;
    const heapK = this.heapK;
    const where = this.where;
    const top = heapV[0]!;
    where[top] = -1;
    const size = --this.size;
    if (size > 0) {
      // Sift the last entry down from the root hole.
      const v = heapV[size]!;
      const k = heapK[size]!;
      let i = 0;
      for (;;) {
        let c = 2 * i + 1;
        if (c >= size) break;
        let ck = heapK[c]!;
        if (c + 1 < size) {
          const rk = heapK[c + 1]!;
          if (rk < ck) {
            c++;
            ck = rk;
          }
        }
        if (ck >= k) break;
        const cv = heapV[c]!;
        heapV[i] = cv;
        heapK[i] = ck;
        where[cv] = i;
        i = c;
      }
      heapV[i] = v;
      heapK[i] = k;
      where[v] = i;
    }
    return top;
  }

  /** Moves vertex `v` with key `k` up from hole `i`. */
  private siftUp(i: number, v: number, k: number): void {
    const heapV = this.heapV;
    const heapK = this.heapK;
    const where = this.where;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const pk = heapK[parent]!;
      if (pk <= k) break;
      const pv = heapV[parent]!;
      heapV[i] = pv;
      heapK[i] = pk;
      where[pv] = i;
      i = parent;
    }
    heapV[i] = v;
    heapK[i] = k;
    where[v] = i;
  }
}
