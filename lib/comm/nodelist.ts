import { BootstrapError } from "../errors.ts";

/**
 * Slurm's compressed host lists (`node[01-03,07],gpu5`, as in SLURM_STEP_NODELIST), expanded to host names in
 * the order `scontrol show hostnames` prints them, so that "the first host of the step" means the same here as
 * to Slurm. Follows Slurm's hostlist.c (hostlist_create on a one-dimensional cluster):
 *
 * - Hosts are separated by commas, spaces, tabs or newlines outside brackets; empty items are skipped.
 * - `prefix[RANGES]suffix`: RANGES is a comma list of `N` or `LO-HI`, each number written with as many digits
 *   as its LO (`n[001-010]` is n001..n010, `x[8-11]` is x8..x11); a range in the order given, duplicates kept.
 *   `LO-` alone is LO. The suffix after the last bracket is kept (`n[1-2]-ib`), as Slurm 23.02.5 and later do.
 * - Several bracket groups (`r[1-2]n[1-2]`) give every combination. The last group varies fastest; the others
 *   vary from the one before it (slowest) back to the first: `c[0-1]s[0-1]n[0-1]` is c0s0n0 c0s0n1 c1s0n0 ...
 *   (Slurm expands the bracket nearest the end of the prefix in its outer loop), which for two groups is the
 *   plain nested order.
 * - A range or a bracket's combinations may hold at most MAX_HOSTS_PER_RANGE hosts, like Slurm's.
 *
 * Where Slurm is lenient with text it never writes itself (a space inside brackets, a number followed by
 * letters before `-`), this is strict: such a list is a BootstrapError, as are `[` without `]`, a bracket with
 * nothing or something not a number in it, HI below LO and a box (`[0x1]`, multi-dimensional clusters only).
 */

/** Most hosts a single range, or the combinations of one bracket before the last, expands to (Slurm's 64 Ki). */
export const MAX_HOSTS_PER_RANGE = 64 * 1024;
/** Most hosts a whole list expands to: more is a mistake, not a cluster. */
export const MAX_HOSTS = 1024 * 1024;
/** What separates hosts outside brackets (Slurm's separators for hostlist_create). */
const SEPARATORS = new Set([",", " ", "\t", "\n"]);
/** Digits, as many as a number may have and still be exact in a double. */
const NUMBER = /^\d{1,15}$/;

/** One `LO-HI` (or `N`) of a bracket: the numbers and the width the numbers are padded to. */
interface Range {
  readonly lo: number;
  readonly hi: number;
  readonly width: number;
}

/**
 * Every host of the compressed list `list`, in Slurm's order (see the file comment). `source` names where the
 * list came from (an environment variable) for the BootstrapError a malformed list raises.
 */
export function expandNodelist(list: string, source = "host list"): string[] {
  const hosts: string[] = [];
  const fail = (what: string): never => {
    throw new BootstrapError(`${source} must be a Slurm host list such as node[01-03,07],gpu5; ${what}`);
  };
  for (const token of splitHosts(list)) expandToken(token, hosts, fail);
  return hosts;
}

/** `list` cut into its items at separators outside brackets (Slurm's _next_tok), empty items dropped. */
export function splitHosts(list: string): string[] {
  const tokens: string[] = [];
  let current = "";
  let inBracket = false;
  for (const c of list) {
    if (c === "[") inBracket = true;
    else if (c === "]") inBracket = false;
    if (!inBracket && SEPARATORS.has(c)) {
      if (current !== "") tokens.push(current);
      current = "";
    } else current += c;
  }
  if (current !== "") tokens.push(current);
  return tokens;
}

/** Appends the hosts of one item (`prefix[ranges]suffix`, or a plain name) to `hosts`. */
function expandToken(token: string, hosts: string[], fail: (what: string) => never): void {
  const open = token.lastIndexOf("[");
  if (open < 0) {
    hosts.push(token);
    return;
  }
  const close = token.indexOf("]", open);
  if (close < 0) fail(`${JSON.stringify(token)} has a [ without ]`);
  const ranges = parseRanges(token.slice(open + 1, close), token, fail);
  pushRanges(token.slice(0, open), token.slice(close + 1), ranges, hosts, token, fail);
}

/**
 * Appends `prefix N suffix` for every N of `ranges`, for every expansion of the brackets in `prefix`: the last
 * bracket of `prefix` in the outer loop, the rest of `prefix` expanded (recursively) inside it (Slurm's
 * _push_range_list).
 */
function pushRanges(
  prefix: string,
  suffix: string,
  ranges: readonly Range[],
  hosts: string[],
  token: string,
  fail: (what: string) => never,
): void {
  const open = prefix.lastIndexOf("[");
  const close = open < 0 ? -1 : prefix.lastIndexOf("]");
  if (open < 0 || close < open) {
    for (const r of ranges) for (let n = r.lo; n <= r.hi; n++) push(hosts, prefix + pad(n, r.width) + suffix, fail);
    return;
  }
  const outer = parseRanges(prefix.slice(open + 1, close), token, fail);
  if (outer.reduce((sum, r) => sum + r.hi - r.lo + 1, 0) > MAX_HOSTS_PER_RANGE) {
    fail(`${JSON.stringify(token)} has a bracket of more than ${MAX_HOSTS_PER_RANGE} values before its last one`);
  }
  const before = prefix.slice(0, open);
  const between = prefix.slice(close + 1);
  for (const r of outer) {
    for (let n = r.lo; n <= r.hi; n++)
      pushRanges(before + pad(n, r.width) + between, suffix, ranges, hosts, token, fail);
  }
}

/** The ranges of one bracket's text (`01-03,07`). */
function parseRanges(text: string, token: string, fail: (what: string) => never): Range[] {
  return text.split(",").map((item) => parseRange(item, token, fail));
}

/** One `LO-HI`, `LO-` or `N` of a bracket, padded to the width LO is written with. */
function parseRange(item: string, token: string, fail: (what: string) => never): Range {
  const dash = item.indexOf("-");
  const loText = dash < 0 ? item : item.slice(0, dash);
  const hiText = dash < 0 ? loText : item.slice(dash + 1) || loText;
  const bad = (why: string): never => fail(`${JSON.stringify(token)} has ${JSON.stringify(item)} in brackets: ${why}`);
  if (!NUMBER.test(loText) || !NUMBER.test(hiText)) bad("expected N or LO-HI, non-negative whole numbers");
  const lo = Number(loText);
  const hi = Number(hiText);
  if (hi < lo) bad("HI is below LO");
  if (hi - lo + 1 > MAX_HOSTS_PER_RANGE) bad(`more than ${MAX_HOSTS_PER_RANGE} hosts`);
  return { lo, hi, width: loText.length };
}

/** `n` in decimal, zero-padded to `width` digits (C's `%0*lu`). */
function pad(n: number, width: number): string {
  return String(n).padStart(width, "0");
}

/** Appends `host`, failing once the list passes MAX_HOSTS. */
function push(hosts: string[], host: string, fail: (what: string) => never): void {
  if (hosts.length >= MAX_HOSTS) fail(`it expands to more than ${MAX_HOSTS} hosts`);
  hosts.push(host);
}
