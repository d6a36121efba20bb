/**
 * The parameters of a UTS tree, as the UTS 2.1 benchmark takes them (`uts -t 1 -a 3 -d 10 -b 4 -r 19`), their
 * defaults (UTS's own: a tree given by a few explicit parameters takes the rest from here, as the C program
 * does), and their parsing and printing.
 */
import { InputError } from "../common/errors.ts";

/** Tree types, in UTS's numbering (`-t 0` is binomial). */
export const TREE_TYPES = ["binomial", "geometric", "hybrid", "balanced"] as const;
export type TreeType = (typeof TREE_TYPES)[number];

/** Shape functions of geometric trees, in UTS's numbering (`-a 3` is fixed). */
export const SHAPES = ["linear", "expdec", "cyclic", "fixed"] as const;
export type Shape = (typeof SHAPES)[number];

export interface TreeParams {
  /** How the number of children is drawn. `-t`. @default "geometric" */
  readonly type: TreeType;
  /** Root branching factor b_0 (binomial: the root's children; geometric: the expected count at the root). `-b`. @default 4 */
  readonly b0: number;
  /** Geometric, hybrid, balanced: gen_mx, the depth the shape function aims at. `-d`/`--depth`. @default 6 */
  readonly genMx: number;
  /** Geometric: how the expected branching factor changes with depth. `-a`. @default "linear" */
  readonly shape: Shape;
  /** Binomial: probability that a node below the root has children. `-q`. @default 15 / 64 */
  readonly q: number;
  /** Binomial: how many children such a node has. `-m`. @default 4 */
  readonly m: number;
  /** Root seed, 0 <= r < 2^31. `-r`. @default 0 */
  readonly seed: number;
  /** Hybrid: geometric above depth shift x gen_mx, binomial from there. `-f`. @default 0.5 */
  readonly shift: number;
  /** SHA-1 evaluations per child (compute granularity; the extra ones only make nodes costlier). `-g`. @default 1 */
  readonly granularity: number;
}

export const DEFAULT_PARAMS: TreeParams = {
  type: "geometric",
  b0: 4,
  genMx: 6,
  shape: "linear",
  q: 15 / 64,
  m: 4,
  seed: 0,
  shift: 0.5,
  granularity: 1,
};

/** Cap on a node's children (UTS MAXNUMCHILDREN); a binomial root is capped at ceil(b0) instead. */
export const MAX_CHILDREN = 100;

/** A tree parameter's UTS flag, long option name, and how its value is read. */
interface ParamSpec {
  readonly flag: string;
  readonly key: keyof TreeParams;
  readonly parse: (option: string, raw: string) => TreeParams[keyof TreeParams];
}

/** A whole number in [min, max]. */
function whole(min: number, max: number) {
  return (option: string, raw: string): number => {
    const n = Number(raw);
    if (!/^\d+$/.test(raw) || n < min || n > max) {
      throw new InputError(`uts: option ${option} must be a whole number from ${min} to ${max}; got ${quote(raw)}`);
    }
    return n;
  };
}

/** A decimal number in [min, max] (as C's atof reads it: 4, 0.124875, 2e3). */
function decimal(min: number, max: number, above = false) {
  return (option: string, raw: string): number => {
    const n = Number(raw);
    if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(raw) || n > max || n < min || (above && n === min)) {
      const range = above ? `above ${min} and at most ${max}` : `from ${min} to ${max}`;
      throw new InputError(`uts: option ${option} must be a number ${range}; got ${quote(raw)}`);
    }
    return n;
  };
}

/** A name from `names`, or its index (UTS's number). */
function oneOf<T extends string>(names: readonly T[]) {
  return (option: string, raw: string): T => {
    const lower = raw.toLowerCase();
    const byName = names.find((n) => n === lower);
    const byIndex = /^\d$/.test(raw) ? names[Number(raw)] : undefined;
    const found = byName ?? byIndex;
    if (found === undefined) {
      const known = names.map((n, i) => `${i} (${n})`).join(", ");
      throw new InputError(`uts: option ${option} must be one of ${known}; got ${quote(raw)}`);
    }
    return found;
  };
}

function quote(raw: string): string {
  return JSON.stringify(raw);
}

/** The explicit tree parameters, by long option name (`--depth`); the UTS flag (`-d`) is an alias. */
export const PARAM_OPTIONS: Readonly<Record<string, ParamSpec>> = {
  type: { flag: "t", key: "type", parse: oneOf(TREE_TYPES) },
  b0: { flag: "b", key: "b0", parse: decimal(0, 1e6, true) },
  depth: { flag: "d", key: "genMx", parse: whole(1, 1e6) },
  shape: { flag: "a", key: "shape", parse: oneOf(SHAPES) },
  q: { flag: "q", key: "q", parse: decimal(0, 1) },
  m: { flag: "m", key: "m", parse: whole(0, 1e6) },
  seed: { flag: "r", key: "seed", parse: whole(0, 2 ** 31 - 1) },
  shift: { flag: "f", key: "shift", parse: decimal(0, 1e6) },
  granularity: { flag: "g", key: "granularity", parse: whole(1, 1e6) },
};

/** UTS flag letter to long option name: `t` to `type`. */
export const FLAG_NAMES: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(PARAM_OPTIONS).map(([name, spec]) => [spec.flag, name]),
);

/** `-d/--depth`: how messages name an explicit parameter. */
export function optionLabel(name: string): string {
  const spec = PARAM_OPTIONS[name];
  return spec ? `-${spec.flag}/--${name}` : `--${name}`;
}

/**
 * `base` with the explicit parameters in `values` (long option name to raw string) applied, each checked; a bad
 * value is an InputError naming the option and the value.
 */
export function applyParams(base: TreeParams, values: Readonly<Record<string, string | undefined>>): TreeParams {
  const out: Record<string, unknown> = { ...base };
  for (const [name, raw] of Object.entries(values)) {
    const spec = PARAM_OPTIONS[name];
    if (!spec || raw === undefined) continue;
    out[spec.key] = spec.parse(optionLabel(name), raw);
  }
  return out as unknown as TreeParams;
}

/**
 * Reads a UTS command line (`-t 1 -a 3 -d 10 -b 4 -r 19`) over UTS's defaults; a repeated flag takes its last
 * value, as in UTS. For the sample tree table, whose entries are copied from UTS's sample_trees.sh.
 */
export function parseUtsArgs(text: string): TreeParams {
  const words = text.trim().split(/\s+/);
  const values: Record<string, string> = {};
  for (let i = 0; i < words.length; i += 2) {
    const flag = /^-([a-z])$/.exec(words[i] ?? "")?.[1];
    const name = flag === undefined ? undefined : FLAG_NAMES[flag];
    const value = words[i + 1];
    if (name === undefined || value === undefined) throw new InputError(`uts: bad UTS parameters ${quote(text)}`);
    values[name] = value;
  }
  return applyParams(DEFAULT_PARAMS, values);
}

/**
 * The parameters as a UTS command line, naming only those the tree type uses (and -f, -g when not default):
 * `-t 1 -a 3 -d 10 -b 4 -r 19`, `-t 0 -b 2000 -q 0.124875 -m 8 -r 42`.
 */
export function formatParams(p: TreeParams): string {
  const parts = [`-t ${TREE_TYPES.indexOf(p.type)}`];
  if (p.type === "geometric" || p.type === "hybrid") parts.push(`-a ${SHAPES.indexOf(p.shape)}`);
  if (p.type !== "binomial") parts.push(`-d ${p.genMx}`);
  parts.push(`-b ${p.b0}`);
  if (p.type === "binomial" || p.type === "hybrid") parts.push(`-q ${p.q}`, `-m ${p.m}`);
  parts.push(`-r ${p.seed}`);
  if (p.type === "hybrid" && p.shift !== DEFAULT_PARAMS.shift) parts.push(`-f ${p.shift}`);
  if (p.granularity !== 1) parts.push(`-g ${p.granularity}`);
  return parts.join(" ");
}

/**
 * Whether two parameter sets make the same tree: they may differ in parameters the tree type does not use and
 * in granularity (which changes the cost of a node, not the tree).
 */
export function sameTree(a: TreeParams, b: TreeParams): boolean {
  return formatParams({ ...a, granularity: 1 }) === formatParams({ ...b, granularity: 1 });
}
