/**
 * Streaming parser for the DIMACS 9th Implementation Challenge shortest-path format (.gr):
 *
 *     c any comment
 *     p sp N M          exactly once, before the first arc: N vertices (ids 1..N), M arcs
 *     a U V W           a directed arc U -> V of integer weight W >= 0
 *
 * The file is read in large chunks and parsed byte by byte (no per-line strings on the hot path). Blank lines
 * are ignored, `\r\n` line ends accepted. Every error is an `InputError` whose message starts with
 * `FILE:LINE:` (or `FILE:` for whole-file problems) and says what is wrong.
 */
import { InputError } from "../common/errors.ts";
import { openInput } from "../common/files.ts";
import { ArcList, buildGraph, checkRange, type Graph } from "./graph.ts";

export interface DimacsOptions {
  /** Read every arc in both directions. @default false */
  readonly undirected?: boolean;
  /**
   * Keep only the out-arcs of the 0-based vertex range [lo, hi), given directly or computed from N once the
   * p line is read (e.g. `(n) => blockRange(n, size, rank)`). The graph still has `n` = N.
   * @default the whole graph
   */
  readonly range?: readonly [number, number] | ((n: number) => readonly [number, number]);
}

/** Bytes read from the file per read call. */
export const DEFAULT_CHUNK_BYTES = 1 << 20;
/** Largest weight accepted (weights are stored as Int32). */
export const MAX_WEIGHT = 2 ** 31 - 1;
const MAX_VERTICES = 2 ** 31 - 2;
/** Arc lists are preallocated from the p line up to this many arcs, and grown beyond. */
const MAX_PREALLOC = 1 << 26;

const NL = 10;
const CR = 13;
const SPACE = 32;
const TAB = 9;
const MINUS = 45;
const ZERO = 48;

// Position after the last readInt; module-level so the hot path allocates nothing.
let pos = 0;

/** Reads an optionally signed decimal integer at `p`; NaN when there is no digit. Sets `pos` after it. */
function readInt(buf: Uint8Array, p: number, end: number): number {
  let neg = false;
  if (p < end && buf[p] === MINUS) {
    neg = true;
    p++;
  }
  const start = p;
  let v = 0;
  while (p < end) {
    const d = buf[p]! - ZERO;
    if (d < 0 || d > 9) break;
    v = v * 10 + d;
    p++;
  }
  pos = p;
  if (p === start) return Number.NaN;
  return neg ? -v : v;
}

function skipBlanks(buf: Uint8Array, p: number, end: number): number {
  while (p < end) {
    const c = buf[p];
    if (c !== SPACE && c !== TAB) break;
    p++;
  }
  return p;
}

function isBlank(c: number | undefined): boolean {
  return c === SPACE || c === TAB;
}

/** True when buf[p] (p < end) is a blank. */
function blankAt(buf: Uint8Array, p: number, end: number): boolean {
  return p < end && isBlank(buf[p]);
}

/** True at a line end: `\n`, `\r`, or the end of the parsed range. */
function isEol(buf: Uint8Array, p: number, end: number): boolean {
  return p >= end || buf[p] === NL || buf[p] === CR;
}

class DimacsParser {
  /** Number of the line being parsed (1-based). */
  line = 0;
  n = -1;
  m = -1;
  pLine = 0;
  arcsRead = 0;
  lo = 0;
  hi = 0;
  arcs = new ArcList(16);
  private buf: Buffer = Buffer.alloc(0);
  private readonly file: string;
  private readonly options: DimacsOptions;

  constructor(file: string, options: DimacsOptions) {
    this.file = file;
    this.options = options;
  }

  /** Parses the whole lines in buf[start, end): `end` is just after a `\n`, or the end of the file. */
  parse(buf: Buffer, start: number, end: number): void {
    this.buf = buf;
    let i = start;
    const undirected = this.options.undirected ?? false;
    while (i < end) {
      this.line++;
      let p = skipBlanks(buf, i, end);
      const c = p < end ? buf[p] : NL;
      if (c === 97 /* a */) {
        if (this.n < 0) this.fail(i, end, "arc line before the `p sp N M` line");
        const n = this.n;
        const okA = blankAt(buf, p + 1, end);
        const u = readInt(buf, skipBlanks(buf, p + 1, end), end);
        const okU = okA && blankAt(buf, pos, end);
        const v = readInt(buf, skipBlanks(buf, pos, end), end);
        const okV = blankAt(buf, pos, end);
        const w = readInt(buf, skipBlanks(buf, pos, end), end);
        p = skipBlanks(buf, pos, end);
        if (!okU || !okV || Number.isNaN(u) || Number.isNaN(v) || Number.isNaN(w) || !isEol(buf, p, end)) {
          this.fail(i, end, "malformed arc line, expected `a U V W` with integers U, V, W");
        }
        if (u < 1 || u > n) this.fail(i, end, `arc tail ${u} out of range 1..${n}`);
        if (v < 1 || v > n) this.fail(i, end, `arc head ${v} out of range 1..${n}`);
        if (w < 0) this.fail(i, end, `negative weight ${w}`);
        if (w > MAX_WEIGHT) this.fail(i, end, `weight ${w} larger than ${MAX_WEIGHT}`);
        this.arcsRead++;
        const t = u - 1;
        const h = v - 1;
        if ((t >= this.lo && t < this.hi) || (undirected && h >= this.lo && h < this.hi)) this.arcs.push(t, h, w);
      } else if (c === 99 /* c */) {
        // comment: skipped below
      } else if (c === 112 /* p */) {
        this.header(buf, i, p + 1, end);
      } else if (!isEol(buf, p, end)) {
        this.fail(i, end, "unknown line type, expected `c`, `p` or `a`");
      }
      const nl = buf.indexOf(NL, p);
      i = nl < 0 || nl >= end ? end : nl + 1;
    }
  }

  private header(buf: Buffer, lineStart: number, p: number, end: number): void {
    if (this.n >= 0) this.fail(lineStart, end, `duplicate p line (first at line ${this.pLine})`);
    const blank = blankAt(buf, p, end);
    p = skipBlanks(buf, p, end);
    const sp = p + 2 < end && buf[p] === 115 /* s */ && buf[p + 1] === 112 /* p */ && isBlank(buf[p + 2]);
    const n = readInt(buf, skipBlanks(buf, p + 2, end), end);
    const okN = blankAt(buf, pos, end);
    const m = readInt(buf, skipBlanks(buf, pos, end), end);
    if (!blank || !sp || !okN || Number.isNaN(n) || Number.isNaN(m) || !isEol(buf, skipBlanks(buf, pos, end), end)) {
      this.fail(lineStart, end, "malformed p line, expected `p sp N M` with integers N, M");
    }
    if (n < 1 || n > MAX_VERTICES) this.fail(lineStart, end, `vertex count ${n} out of range 1..${MAX_VERTICES}`);
    if (m < 0) this.fail(lineStart, end, `negative arc count ${m}`);
    this.n = n;
    this.m = m;
    this.pLine = this.line;
    const range = this.options.range;
    const r = typeof range === "function" ? range(n) : range;
    try {
      [this.lo, this.hi] = checkRange(n, r?.[0], r?.[1]);
    } catch (err) {
      throw new InputError(`${this.file}: ${(err as Error).message} (N = ${n} from the p line)`, {
        file: this.file,
        line: this.line,
      });
    }
    const share = (this.hi - this.lo) / n;
    const expected = Math.ceil(m * share * (this.options.undirected ? 2 : 1) * (share < 1 ? 1.1 : 1)) + 16;
    this.arcs = new ArcList(Math.min(expected, MAX_PREALLOC));
  }

  /** The end-of-file checks; builds the graph. */
  finish(): Graph {
    if (this.n < 0) throw new InputError(`${this.file}: no \`p sp N M\` line`, { file: this.file });
    if (this.arcsRead !== this.m) {
      throw new InputError(
        `${this.file}:${this.pLine}: the p line declares ${this.m} arcs but the file has ${this.arcsRead} arc lines`,
        { file: this.file, line: this.pLine },
      );
    }
    return buildGraph(this.n, this.arcs, { undirected: this.options.undirected ?? false, lo: this.lo, hi: this.hi });
  }

  private fail(lineStart: number, end: number, what: string): never {
    const buf = this.buf;
    let e = lineStart;
    while (e < end && buf[e] !== NL && buf[e] !== CR && e - lineStart < 80) e++;
    const text = buf.toString("latin1", lineStart, e);
    throw new InputError(`${this.file}:${this.line}: ${what}: \`${text}\``, { file: this.file, line: this.line });
  }
}

/**
 * Reads a .gr file in chunks of `chunkBytes` and builds its graph (or the out-arcs of `options.range`).
 * Rejects with `InputError` for malformed contents, or the file system's error if the file cannot be read.
 */
export async function readDimacs(
  path: string,
  options: DimacsOptions = {},
  chunkBytes: number = DEFAULT_CHUNK_BYTES,
): Promise<Graph> {
  const parser = new DimacsParser(path, options);
  await using fh = await openInput(path);
  let buf = Buffer.allocUnsafe(Math.max(64, chunkBytes));
  let have = 0;
  for (;;) {
    if (have === buf.length) {
      // One line longer than the buffer: grow it.
      const bigger = Buffer.allocUnsafe(buf.length * 2);
      buf.copy(bigger, 0, 0, have);
      buf = bigger;
    }
    const { bytesRead } = await fh.read(buf, have, buf.length - have, null);
    if (bytesRead === 0) break;
    have += bytesRead;
    const lastNl = buf.lastIndexOf(NL, have - 1);
    if (lastNl < 0) continue;
    parser.parse(buf, 0, lastNl + 1);
    buf.copy(buf, 0, lastNl + 1, have);
    have -= lastNl + 1;
  }
  if (have > 0) parser.parse(buf, 0, have);
  return parser.finish();
}

/** Parses .gr contents already in memory; `file` only names the input in error messages. */
export function parseDimacs(bytes: Uint8Array | string, options: DimacsOptions = {}, file = "<input>"): Graph {
  const buf =
    typeof bytes === "string"
      ? Buffer.from(bytes, "latin1")
      : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const parser = new DimacsParser(file, options);
  parser.parse(buf, 0, buf.length);
  return parser.finish();
}

/**
 * Renders arcs (0-based) as .gr text with 1-based ids, one `a` line per arc in list order.
 * `comments` become `c` lines before the p line.
 */
export function formatDimacs(n: number, arcs: ArcList, comments: readonly string[] = []): string {
  const parts: string[] = comments.map((c) => `c ${c}\n`);
  parts.push(`p sp ${n} ${arcs.count}\n`);
  const { tails, heads, weights } = arcs;
  let block = "";
  for (let i = 0; i < arcs.count; i++) {
    block += `a ${tails[i]! + 1} ${heads[i]! + 1} ${weights[i]!}\n`;
    if (block.length > 1 << 16) {
      parts.push(block);
      block = "";
    }
  }
  parts.push(block);
  return parts.join("");
}
