/**
 * `workpool compare`'s agreement check: every run's rank-0 JSON result line, without the keys that may differ
 * between correct runs, must be the same.
 *
 * The rule for leaving a key out, applied to the keys of the line's objects at any depth:
 * - a timing key: its last word is `seconds`, `ms`, `millis` or `time`, in any case, words being split at
 *   camelCase humps, `_`, `-`, `.` and spaces (`seconds`, `seqSeconds`, `solveMs`, `wallTime`, `wall_time`,
 *   `SOLVE_MS`; not `items`, `sums` or `runtime`);
 * - a name that is configuration, not result: `elapsed`, `wall`, `variant`, `pool`, `mode`, `ranks`, `np`;
 * - a name given with `--ignore KEY` (exact, case-sensitive).
 */
import type { Agreement, ConfigSummary, ResultLine } from "./types.ts";

const TIMING_WORDS = new Set(["seconds", "ms", "millis", "time"]);
const CONFIGURATION_NAMES = new Set(["elapsed", "wall", "variant", "pool", "mode", "ranks", "np"]);

/** The words of a key: `seqSeconds` -> seq, Seconds; `wall_time` -> wall, time; `SOLVE_MS` -> SOLVE, MS. */
function words(key: string): string[] {
  return key.split(/(?<=[a-z0-9])(?=[A-Z])|[_\-.\s]+/).filter((w) => w !== "");
}

/** Whether the agreement check leaves `key` out without being told (the timing and configuration rule). */
export function isVolatileKey(key: string): boolean {
  const last = words(key).at(-1)?.toLowerCase();
  return (last !== undefined && TIMING_WORDS.has(last)) || CONFIGURATION_NAMES.has(key.toLowerCase());
}

/** `value` with the left-out keys removed at every depth and object keys sorted; the removed names in `dropped`. */
function canonical(value: unknown, ignore: ReadonlySet<string>, dropped: Set<string>): unknown {
  if (Array.isArray(value)) return value.map((v) => canonical(v, ignore, dropped));
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    if (ignore.has(key) || isVolatileKey(key)) dropped.add(key);
    else out[key] = canonical((value as Record<string, unknown>)[key], ignore, dropped);
  }
  return out;
}

/** The last line of rank 0's stdout (`[0] {...}`) that is a JSON object, as compared. */
export function resultLine(stdout: string, ignore: readonly string[] = []): ResultLine | undefined {
  const lines = stdout.split("\n").filter((l) => l.startsWith("[0] {"));
  for (let i = lines.length - 1; i >= 0; i--) {
    let value: unknown;
    try {
      value = JSON.parse((lines[i] as string).slice(4));
    } catch {
      continue;
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) continue;
    const dropped = new Set<string>();
    const text = JSON.stringify(canonical(value, new Set(ignore), dropped));
    return { text, ignored: [...dropped].sort() };
  }
  return undefined;
}

const NO_LINE = "(no JSON result line from rank 0)";

/** Leaf values of a parsed line by dotted path (arrays are leaves), as JSON text. */
function leaves(value: unknown, path: string, out: Map<string, string>): Map<string, string> {
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) leaves(v, path === "" ? k : `${path}.${k}`, out);
  } else out.set(path, JSON.stringify(value));
  return out;
}

/** The dotted paths whose values are not the same in all of `lines` (canonical result lines). */
export function differingKeys(lines: readonly string[]): string[] {
  const parsed = lines.filter((l) => l !== NO_LINE).map((l) => leaves(JSON.parse(l), "", new Map()));
  const paths = new Set(parsed.flatMap((m) => [...m.keys()]));
  return [...paths].filter((p) => new Set(parsed.map((m) => m.get(p) ?? "(absent)")).size > 1).sort();
}

/** Compares every finished run's result line. Runs are named `SPEC -n N #K`. */
export function checkAgreement(configs: readonly ConfigSummary[]): Agreement {
  const lines = new Map<string, string[]>();
  const ignored = new Set<string>();
  let runs = 0;
  for (const c of configs) {
    c.runs.forEach((r, i) => {
      const key = r.result?.text ?? NO_LINE;
      for (const k of r.result?.ignored ?? []) ignored.add(k);
      lines.set(key, [...(lines.get(key) ?? []), `${c.spec} -n ${c.np} #${i + 1}`]);
      runs++;
    });
  }
  const ignoredList = [...ignored].sort();
  if (runs === 0) return { kind: "none" };
  if (lines.size === 1 && lines.has(NO_LINE)) return { kind: "unchecked", runs };
  if (lines.size === 1) return { kind: "agree", runs, ignored: ignoredList };
  return {
    kind: "disagree",
    lines: [...lines].map(([line, from]) => ({ line, runs: from })),
    differing: differingKeys([...lines.keys()]),
    ignored: ignoredList,
  };
}

/** One line on the agreement, for the terminal and the report's banner. */
export function agreementHeadline(a: Agreement): string {
  switch (a.kind) {
    case "agree":
      return (
        (a.runs === 1
          ? "results checked: the one run printed a rank-0 result line (nothing to compare it with)"
          : `results agree: all ${a.runs} runs printed the same rank-0 result line`) +
        (a.ignored.length > 0 ? ` (ignored: ${a.ignored.join(", ")})` : "")
      );
    case "unchecked":
      return "results not checked: rank 0 printed no JSON result line (pass the app's --json flag)";
    case "disagree":
      return (
        `results DISAGREE: ${a.lines.length} different rank-0 result lines` +
        (a.differing.length > 0 ? ` (differing: ${a.differing.join(", ")})` : "") +
        "; no configuration is marked fastest"
      );
    case "none":
      return "results not checked: no run finished";
  }
}
