/**
 * A UTS tree, defined implicitly by a splittable random number generator (Olivier et al., "UTS: An Unbalanced
 * Tree Search Benchmark", LCPC 2006). This follows the UTS 2.1 C sources (uts.c and rng/brg_sha1.c) exactly:
 *
 * - A node's state is 20 bytes. The root's is SHA-1 of 16 zero bytes and the seed as 4 bytes big-endian
 *   (rng_init); child i's is SHA-1 of the parent's 20 bytes and i as 4 bytes big-endian (rng_spawn): one SHA-1
 *   of 24 bytes, a single 64-byte block, per node.
 * - A node's random number is its state's last 4 bytes, big-endian, with the top bit cleared (rng_rand), read
 *   as a probability u = n / 2^31 (rng_toProb).
 * - Binomial (uts_numChildren_bin): the root has floor(b0) children; any other node has m with probability q
 *   (u < q), else none.
 * - Geometric (uts_numChildren_geo): the shape function gives the expected branching factor b_i at depth i
 *   (b0 at the root), p = 1 / (1 + b_i), and the node has floor(log(1 - u) / log(1 - p)) children.
 * - Hybrid: geometric above depth shift x gen_mx, binomial from there. Balanced: b0 children above gen_mx.
 * - At most MAX_CHILDREN children (100), except a binomial root, capped at ceil(b0); balanced is not capped.
 *
 * The floating-point expressions are written as in C, in the same order, so they round the same way.
 */
import * as crypto from "node:crypto";
import { MAX_CHILDREN, type TreeParams } from "./params.ts";

/**
 * A node: its 20-byte SHA-1 state and its depth (the root's is 0). Plain data, so it travels between ranks as
 * it is (msgpackr gives `s` back as a Buffer, which is a Uint8Array).
 */
export interface UtsNode {
  readonly s: Uint8Array;
  readonly d: number;
}

/**
 * SHA-1 of `data`: node:crypto's one-shot `hash` (Node 20.12+), about 1.6x faster here than
 * `createHash("sha1").update(data).digest()` for these 24-byte inputs (it creates no Hash object); the latter
 * on older Node.
 */
const sha1: (data: Uint8Array) => Uint8Array =
  typeof crypto.hash === "function"
    ? (data) => crypto.hash("sha1", data, "buffer")
    : (data) => crypto.createHash("sha1").update(data).digest();

/** 2^31, rng_toProb's divisor. */
const TWO_31 = 2147483648;

/** The children of every node of one tree; one instance per rank (it keeps a scratch buffer and caches). */
export class Tree {
  readonly params: TreeParams;
  private readonly binomial: boolean;
  private readonly hybrid: boolean;
  private readonly balanced: boolean;
  /** Hybrid: depths below this are geometric (C: `height < shiftDepth * gen_mx`). */
  private readonly shiftDepth: number;
  /** Geometric: log(1 - p) by depth, computed on first use (NaN: not yet). */
  private logs = new Float64Array(64).fill(Number.NaN);
  /** The SHA-1 input: a parent's state, then the child's index. */
  private readonly input = new Uint8Array(24);
  /** The state now in `input`. */
  private parent: Uint8Array | undefined;

  constructor(params: TreeParams) {
    this.params = params;
    this.binomial = params.type === "binomial";
    this.hybrid = params.type === "hybrid";
    this.balanced = params.type === "balanced";
    this.shiftDepth = params.shift * params.genMx;
  }

  /** The root: SHA-1 of 16 zero bytes and the seed, big-endian (rng_init). */
  root(): UtsNode {
    const bytes = new Uint8Array(20);
    new DataView(bytes.buffer).setInt32(16, this.params.seed);
    return { s: sha1(bytes), d: 0 };
  }

  /** How many children the node with state `s` at depth `d` has (uts_numChildren). */
  numChildren(s: Uint8Array, d: number): number {
    let n: number;
    if (this.balanced) return d < this.params.genMx ? Math.trunc(this.params.b0) : 0;
    if (this.binomial) {
      // The root's count, floor(b0), is within its cap, ceil(b0).
      if (d === 0) return Math.floor(this.params.b0);
      n = this.binomialCount(s);
    } else if (this.hybrid && !(d < this.shiftDepth)) {
      n = this.binomialCount(s);
    } else {
      n = this.geometricCount(s, d);
    }
    // A count that is not positive (including NaN, from a shape function gone negative) makes a leaf, as in C.
    return n > 0 ? (n > MAX_CHILDREN ? MAX_CHILDREN : n) : 0;
  }

  /**
   * Child `i` of the node with state `parent` (20 bytes): its state (rng_spawn). Consecutive calls for one parent copy its
   * state into the hash input once. With granularity g the hash is computed g times, as UTS does.
   */
  spawn(parent: Uint8Array, i: number): Uint8Array {
    const input = this.input;
    if (parent !== this.parent) {
      input.set(parent);
      this.parent = parent;
    }
    input[20] = i >>> 24;
    input[21] = i >>> 16;
    input[22] = i >>> 8;
    input[23] = i;
    let s = sha1(input);
    for (let g = 1; g < this.params.granularity; g++) s = sha1(input);
    return s;
  }

  /** Every child of `node`. */
  children(node: UtsNode): UtsNode[] {
    const n = this.numChildren(node.s, node.d);
    const out: UtsNode[] = new Array<UtsNode>(n);
    for (let i = 0; i < n; i++) out[i] = { s: this.spawn(node.s, i), d: node.d + 1 };
    return out;
  }

  private binomialCount(s: Uint8Array): number {
    return toProb(s) < this.params.q ? this.params.m : 0;
  }

  private geometricCount(s: Uint8Array, d: number): number {
    let logs = this.logs;
    if (d >= logs.length) {
      const grown = new Float64Array(Math.max(d + 1, logs.length * 2)).fill(Number.NaN);
      grown.set(logs);
      this.logs = logs = grown;
    }
    let log1p = logs[d] as number;
    if (Number.isNaN(log1p)) {
      const p = 1.0 / (1.0 + this.branching(d));
      log1p = logs[d] = Math.log(1 - p);
    }
    return Math.floor(Math.log(1 - toProb(s)) / log1p);
  }

  /** The expected branching factor b_i at depth `d` (the shape function; b0 at the root). */
  private branching(d: number): number {
    const { b0, genMx, shape } = this.params;
    if (d === 0) return b0;
    switch (shape) {
      case "expdec":
        return b0 * Math.pow(d, -Math.log(b0) / Math.log(genMx));
      case "cyclic":
        if (d > 5 * genMx) return 0.0;
        return Math.pow(b0, Math.sin((2.0 * 3.141592653589793 * d) / genMx));
      case "fixed":
        return d < genMx ? b0 : 0;
      case "linear":
        return b0 * (1.0 - d / genMx);
    }
  }
}

/** The node's random number on [0, 1): its state's last 4 bytes, big-endian, top bit cleared, over 2^31. */
function toProb(s: Uint8Array): number {
  return (
    ((((s[16] as number) << 24) | ((s[17] as number) << 16) | ((s[18] as number) << 8) | (s[19] as number)) &
      0x7fffffff) /
    TWO_31
  );
}
