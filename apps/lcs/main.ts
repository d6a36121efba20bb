/**
 * Longest common subsequence of two generated strings, as a DOACROSS wavefront (`world.doacross`, seed 001
 * §4.2): row i of the table L (i in 1..|A|) needs row i-1 and, in each column j, the value at j-1 of the same
 * row: a dependence of distance 1 along the columns. Each rank owns a block of the columns and keeps two rows
 * of it; for each block of rows it gets from the rank on its left the column just before its own (one number
 * per row) and sends the rank on its right its last column. Rank 0 prints the length, and with `--verify` the
 * plain sequential dynamic program's; `--speedup` times that too.
 *   apps/lcs [--length N] [--seed S] [--block B] [--verify] [--speedup] [--json]
 */
import { connect } from "workpool";
import { agreeOnInput } from "../common/agree.ts";
import { answerHelp, intOption, parseArgs } from "../common/args.ts";
import { Random } from "../common/random.ts";

const APP = "lcs";
/** Longest string `--length` accepts: the sequential check is quadratic (1e6 letters: about 10^12 cells). */
const MAX_LENGTH = 1_000_000;

interface Options {
  length: number;
  seed: number;
  block: number | undefined;
  verify: boolean;
  speedup: boolean;
  json: boolean;
}

/** The command line; bad input is an InputError naming the option and the value. */
function parse(argv: readonly string[]): Options {
  const a = parseArgs(APP, argv, {
    length: "value",
    seed: "value",
    block: "value",
    verify: "switch",
    speedup: "switch",
    json: "switch",
  } as const);
  const length = intOption(APP, "length", a.length, 8000, 1, MAX_LENGTH);
  return {
    length,
    seed: intOption(APP, "seed", a.seed, 1, 0, 2 ** 32 - 1),
    block: a.block === undefined ? undefined : intOption(APP, "block", a.block, 1, 1, length),
    verify: a.verify === true,
    speedup: a.speedup === true,
    json: a.json === true,
  };
}

/** A string of `n` letters from a 4-letter alphabet, as codes. */
function generate(n: number, random: Random): Uint8Array {
  const s = new Uint8Array(n);
  for (let i = 0; i < n; i++) s[i] = Math.floor(random.next() * 4);
  return s;
}

/** The plain dynamic program, two rows at a time. */
export function lcsSequential(a: Uint8Array, b: Uint8Array): number {
  let prev = new Int32Array(b.length + 1);
  let cur = new Int32Array(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    const ai = a[i - 1];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = ai === b[j - 1] ? (prev[j - 1] as number) + 1 : Math.max(prev[j] as number, cur[j - 1] as number);
    }
    [prev, cur] = [cur, prev];
  }
  return prev[b.length] as number;
}

const USAGE = `Usage: workpool launch -n N apps/lcs [options]

Longest common subsequence of two generated strings, as a DOACROSS wavefront (world.doacross).

Options:
  --length N    length of each string, 1 to ${MAX_LENGTH} (default 8000)
  --seed S      seed of the strings (default 1)
  --block B     rows per block (default: chosen at run time)
  --verify      compare with the plain sequential dynamic program; status 1 on a mismatch
  --speedup     also time the sequential program and print the speedup and efficiency
  --json        one JSON result line on rank 0
  -h, --help    show this help
`;

const world = await connect();
await answerHelp(world, USAGE);
// Every rank parses; bad input is one line on rank 0 and status 2 everywhere.
const options = await agreeOnInput(APP, world, () => parse(process.argv.slice(2)));
const random = new Random(options.seed);
const A = generate(options.length, random);
const B = generate(options.length, random);

// This rank's columns c0..c1-1 (of B's 0..n-1), as L's columns c0+1..c1; `prev[k]` is L[i-1][c0 + k], with
// prev[0] the column to the left (the previous rank's last), 0 on rank 0.
let prev = new Int32Array(0);
let cur = new Int32Array(0);
let last = 0;
await world.barrier();
const t0 = performance.now();
const r = await world.doacross<number>(
  A.length,
  B.length,
  (rows, cols, left) => {
    const [c0, c1] = cols;
    const w = c1 - c0;
    if (prev.length !== w + 1) {
      prev = new Int32Array(w + 1);
      cur = new Int32Array(w + 1);
    }
    const out: number[] = [];
    let up = prev;
    let row = cur;
    const b = B.subarray(c0, c1);
    for (let i = rows[0]; i < rows[1]; i++) {
      const ai = A[i];
      // left[k]: L[i+1][c0], the previous rank's last column in this row (L[i][c0] is still in up[0]); rank 0's
      // left column is all zeros.
      row[0] = left ? (left[i - rows[0]] as number) : 0;
      for (let k = 1; k <= w; k++) {
        row[k] = ai === b[k - 1] ? (up[k - 1] as number) + 1 : Math.max(up[k] as number, row[k - 1] as number);
      }
      out.push(row[w] as number);
      [up, row] = [row, up];
    }
    prev = up;
    cur = row;
    last = up[w] as number;
    return out;
  },
  options.block === undefined ? {} : { blockSize: options.block },
);
const seconds = (performance.now() - t0) / 1000;
const length = world.size === 1 ? last : await world.bcast(last, Math.min(world.size, B.length) - 1);
if (world.rank === 0) {
  const result: Record<string, unknown> = {
    length,
    n: options.length,
    ranks: world.size,
    seconds,
    block: r.blockSize,
    blocks: r.blocks,
    fixedUs: r.fixedMs * 1000,
    rowUs: r.iterationMs * 1000,
  };
  if (options.verify || options.speedup) {
    const s0 = performance.now();
    const expected = lcsSequential(A, B);
    const seqSeconds = (performance.now() - s0) / 1000;
    if (options.verify && expected !== length) {
      console.error(`lcs: parallel length ${length}, sequential ${expected}`);
      process.exitCode = 1;
    }
    result.verified = expected === length;
    if (options.speedup) Object.assign(result, { seqSeconds, speedup: seqSeconds / seconds });
  }
  if (options.json) console.log(JSON.stringify(result));
  else {
    console.log(
      `lcs: length ${length} of two ${options.length}-letter strings on ${world.size} rank(s) in ${seconds.toFixed(3)} s (last block ${r.blockSize} rows)`,
    );
    if (result.verified !== undefined)
      console.log(`lcs: ${result.verified ? "verified" : "WRONG"} against the sequential dynamic program`);
    if (options.speedup)
      console.log(
        `lcs: sequential ${(result.seqSeconds as number).toFixed(3)} s, speedup ${(result.speedup as number).toFixed(2)}x`,
      );
  }
}
await world.close();
