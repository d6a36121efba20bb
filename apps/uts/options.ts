/**
 * The uts app's command line: which tree (a name, or UTS's own flags), and how to run it. Everything is checked
 * here, before any work, so bad input is one line naming the option and the value.
 */
import { intOption, parseArgs } from "../common/args.ts";
import { InputError } from "../common/errors.ts";
import type { Counts } from "./counts.ts";
import { applyParams, DEFAULT_PARAMS, FLAG_NAMES, formatParams, PARAM_OPTIONS, type TreeParams } from "./params.ts";
import { DEFAULT_TREE, SAMPLE_TREES, type SampleTree, sampleTree, sampleWithParams } from "./samples.ts";

const APP = "uts";
/** Most runs `--repeat` asks for. */
const MAX_REPEAT = 1000;

const SPEC = {
  tree: "value",
  ...(Object.fromEntries(Object.keys(PARAM_OPTIONS).map((name) => [name, "value"])) as Record<string, "value">),
  sequential: "switch",
  verify: "switch",
  speedup: "switch",
  json: "switch",
  repeat: "value",
  list: "switch",
} as const;

export interface UtsOptions {
  /** How results name the tree: the sample's name, or its UTS parameters. */
  readonly label: string;
  readonly params: TreeParams;
  /** The named tree with these parameters, whose counts `--verify` checks against. */
  readonly known: SampleTree | undefined;
  readonly sequential: boolean;
  readonly verify: boolean;
  /** `--speedup`: after the pool runs, time the sequential loop on rank 0 and print both, with the speedup. */
  readonly speedup: boolean;
  readonly json: boolean;
  readonly repeat: number;
  /** `--list`: print the named trees and stop. */
  readonly list: boolean;
}

/**
 * Rewrites UTS's one-letter flags (`-d 9`) as the long options they stand for (`--depth 9`); a value is left
 * as it is, even one starting with `-`, so `-r -5` reaches the seed's check. An unknown flag is an InputError.
 */
export function expandFlags(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg.startsWith("--")) {
      out.push(arg);
      const name = arg.slice(2);
      // A value option's value follows it unless given with `=`.
      if ((SPEC as Record<string, string>)[name] === "value" && i + 1 < argv.length) out.push(argv[++i] as string);
      continue;
    }
    if (arg.startsWith("-")) {
      const flag = arg.slice(1);
      const name = Object.hasOwn(FLAG_NAMES, flag) ? FLAG_NAMES[flag] : undefined;
      if (name === undefined) {
        const flags = Object.entries(PARAM_OPTIONS).map(([n, s]) => `-${s.flag} (--${n})`);
        throw new InputError(`${APP}: unknown option ${arg} (UTS flags: ${flags.join(", ")})`);
      }
      out.push(`--${name}`);
      if (i + 1 < argv.length) out.push(argv[++i] as string);
      continue;
    }
    out.push(arg);
  }
  return out;
}

/** Reads the command line (without node and the app). Throws InputError for bad input. */
export function parseOptions(argv: readonly string[]): UtsOptions {
  const args = parseArgs(APP, expandFlags(argv), SPEC) as Record<string, string | boolean | undefined>;
  const explicit: Record<string, string> = {};
  for (const name of Object.keys(PARAM_OPTIONS)) {
    const value = args[name];
    if (typeof value === "string") explicit[name] = value;
  }
  const treeName = args.tree as string | undefined;
  let base: TreeParams;
  if (treeName !== undefined) {
    const sample = sampleTree(treeName);
    if (!sample) {
      const known = SAMPLE_TREES.map((t) => t.name).join(", ");
      throw new InputError(`${APP}: unknown tree ${JSON.stringify(treeName)} for --tree (known: ${known})`);
    }
    base = sample.params;
  } else {
    // No tree and no parameters: the bundled default. Parameters alone start from UTS's defaults, as in UTS.
    base = Object.keys(explicit).length === 0 ? (sampleTree(DEFAULT_TREE) as SampleTree).params : DEFAULT_PARAMS;
  }
  const params = applyParams(base, explicit);
  const known = sampleWithParams(params);
  const label = known
    ? `${known.name}${params.granularity !== 1 ? ` -g ${params.granularity}` : ""}`
    : formatParams(params);
  const sequential = args.sequential === true;
  const verify = args.verify === true;
  const speedup = args.speedup === true;
  if (sequential && speedup) {
    throw new InputError(`${APP}: --speedup compares a pool run with the sequential loop; drop --sequential`);
  }
  if (sequential && verify && !known) {
    throw new InputError(
      `${APP}: --verify needs known counts or a pool run to check against the sequential search; ` +
        `no named tree has the parameters ${formatParams(params)}`,
    );
  }
  return {
    label,
    params,
    known,
    sequential,
    verify,
    speedup,
    json: args.json === true,
    repeat: intOption(APP, "repeat", args.repeat as string | undefined, 1, 1, MAX_REPEAT),
    list: args.list === true,
  };
}

/** The table `--list` prints: one line per named tree. */
export function sampleTable(): string[] {
  const show = (n: number | undefined) => (n === undefined ? "-" : String(n));
  const rows = SAMPLE_TREES.map((t) => [
    t.name,
    t.args,
    t.kind,
    show(t.counts.nodes),
    show(t.counts.leaves),
    show(t.counts.depth),
    t.source === "published" ? "published" : "UTS C reference",
  ]);
  const header = ["tree", "UTS parameters", "kind", "nodes", "leaves", "depth", "counts"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => (i >= 3 && i <= 5 ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number)))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line), `default: ${DEFAULT_TREE}`];
}

/** The counts `--verify` checks a run against, and where they come from; undefined when no named tree matches. */
export function expectedCounts(o: UtsOptions): { counts: Partial<Counts>; source: string } | undefined {
  if (!o.known) return undefined;
  const whose = o.known.source === "published" ? "as published for" : "as the UTS C reference counts";
  return { counts: o.known.counts, source: `${whose} ${o.known.name}` };
}
