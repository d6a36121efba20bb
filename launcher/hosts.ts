import { readFileSync } from "node:fs";
import { hostname, networkInterfaces } from "node:os";
import { UsageError } from "./usage-error.ts";

/** One host a job may run ranks on, with how many ranks it takes before it is full. */
export interface HostSlots {
  readonly name: string;
  readonly slots: number;
  /** The most ranks `--oversubscribe` may put there (a hostfile's `max_slots=M`); no limit when absent. */
  readonly maxSlots?: number;
}

const HOST_NAME = /^[A-Za-z0-9_.:[\]-]+$/;
const MAX_SLOTS = 1 << 16;

/**
 * Reads a hostfile as OpenMPI writes them: one host a line, `HOST` or `HOST slots=N` (a host without slots takes
 * one), optionally `max_slots=M` (a cap for --oversubscribe, at least N), `#` starts a comment, blank lines are
 * skipped, and a host named twice adds up its slots. `file` names the file in errors.
 */
export function parseHostfile(text: string, file: string): HostSlots[] {
  const hosts: HostSlots[] = [];
  text.split("\n").forEach((raw, i) => {
    const line = raw.replace(/#.*/, "").trim();
    if (line === "") return;
    const where = `hostfile ${file}, line ${i + 1}`;
    const [name, ...rest] = line.split(/\s+/) as [string, ...string[]];
    checkName(name, where);
    let slots: number | undefined;
    let maxSlots: number | undefined;
    for (const word of rest) {
      const m = /^(slots|max[-_]slots)=(\d+)$/.exec(word);
      if (!m) throw new UsageError(`${where}: expected HOST slots=N [max_slots=M]; got ${JSON.stringify(line)}`);
      if (m[1] === "slots") slots = checkSlots(Number(m[2]), where);
      else maxSlots = checkSlots(Number(m[2]), where);
    }
    if (slots !== undefined && maxSlots !== undefined && maxSlots < slots) {
      throw new UsageError(`${where}: max_slots=${maxSlots} is less than slots=${slots}`);
    }
    add(hosts, name, slots ?? 1, maxSlots);
  });
  if (hosts.length === 0) throw new UsageError(`hostfile ${file} names no host`);
  return hosts;
}

/** Reads a hostfile from disk (parseHostfile), with an error naming it when it cannot be read. */
export function readHostfile(file: string): HostSlots[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new UsageError(`option --hostfile: cannot read ${file}: ${(e as Error).message}`);
  }
  return parseHostfile(text, file);
}

/** Reads `-H a:8,b:8,c` (a host without a count takes one slot). */
export function parseHostList(list: string): HostSlots[] {
  const hosts: HostSlots[] = [];
  for (const item of list.split(",")) {
    const where = `option --host ${JSON.stringify(list)}`;
    // An IPv6 address is written in brackets: [::1]:4.
    const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(item.trim());
    if (!m) throw new UsageError(`${where}: expected HOST or HOST:SLOTS; got ${JSON.stringify(item)}`);
    const name = m[1] as string;
    checkName(name, where);
    add(hosts, name, m[2] === undefined ? 1 : checkSlots(Number(m[2]), where));
  }
  return hosts;
}

function checkName(name: string, where: string): void {
  if (!HOST_NAME.test(name)) throw new UsageError(`${where}: ${JSON.stringify(name)} is not a host name`);
}

function checkSlots(n: number, where: string): number {
  if (!Number.isInteger(n) || n < 1 || n > MAX_SLOTS) {
    throw new UsageError(`${where}: slots must be a whole number from 1 to ${MAX_SLOTS}; got ${n}`);
  }
  return n;
}

function add(hosts: HostSlots[], name: string, slots: number, maxSlots?: number): void {
  const i = hosts.findIndex((h) => h.name === name);
  const cap = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined ? undefined : a + b;
  if (i < 0) hosts.push(maxSlots === undefined ? { name, slots } : { name, slots, maxSlots });
  else {
    const before = hosts[i] as HostSlots;
    const max = cap(before.maxSlots, maxSlots);
    hosts[i] =
      max === undefined ? { name, slots: before.slots + slots } : { name, slots: before.slots + slots, maxSlots: max };
  }
}

/** The total of the hosts' slots: the number of ranks a job on them gets when -n is not given. */
export function totalSlots(hosts: readonly HostSlots[]): number {
  return hosts.reduce((n, h) => n + h.slots, 0);
}

/**
 * Which host each of `np` ranks runs on: ranks fill the hosts in order, each up to its slots (rank 0 on the
 * first host), as OpenMPI's default `--map-by slot`. More ranks than slots is a UsageError unless
 * `oversubscribe`, which then deals the extra ranks round-robin over the hosts, one each in turn.
 */
export function placeRanks(hosts: readonly HostSlots[], np: number, oversubscribe: boolean): string[] {
  const total = totalSlots(hosts);
  if (np > total && !oversubscribe) {
    throw new UsageError(
      `${np} ranks do not fit in the ${total} slot${total === 1 ? "" : "s"} of ${hosts.map((h) => `${h.name}:${h.slots}`).join(",")}; ` +
        "give fewer ranks, more slots, or --oversubscribe",
    );
  }
  const counts = hosts.map(() => 0);
  let left = np;
  for (let i = 0; i < hosts.length && left > 0; i++) {
    const n = Math.min((hosts[i] as HostSlots).slots, left);
    counts[i] = n;
    left -= n;
  }
  const room = (i: number) => (counts[i] as number) < ((hosts[i] as HostSlots).maxSlots ?? Infinity);
  if (left > 0 && !hosts.some((_, i) => room(i))) throw full(hosts, np);
  for (let i = 0; left > 0; i = (i + 1) % hosts.length) {
    if (!room(i)) {
      if (!hosts.some((_, k) => room(k))) throw full(hosts, np);
      continue;
    }
    counts[i] = (counts[i] as number) + 1;
    left--;
  }
  const placement: string[] = [];
  hosts.forEach((h, i) => {
    for (let k = 0; k < (counts[i] as number); k++) placement.push(h.name);
  });
  return placement;
}

/** The error for `np` ranks that do not fit even oversubscribed: every host is at its max_slots. */
function full(hosts: readonly HostSlots[], np: number): UsageError {
  const caps = hosts.map((h) => `${h.name}:${h.maxSlots ?? "unlimited"}`).join(",");
  return new UsageError(`${np} ranks do not fit under the hosts' max_slots (${caps}), even with --oversubscribe`);
}

/**
 * True when `name` is this machine: `localhost`, a loopback address (127.0.0.0/8, as Debian's 127.0.1.1 for
 * the host's own name), its host name (short or full), or one of its own interface addresses. Ranks placed there are started as local child processes, without the agent.
 */
export function isLocalHost(name: string): boolean {
  const bare = name.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  if (bare === "localhost" || bare === "::1" || /^127\.\d+\.\d+\.\d+$/.test(bare)) return true;
  const me = hostname().toLowerCase();
  if (bare === me || bare === me.split(".")[0]) return true;
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.address.toLowerCase() === bare) return true;
  }
  return false;
}

/**
 * The words of a command line as a POSIX shell would split it, for `--agent "ssh -p 2222 -o BatchMode=yes"`:
 * blanks separate words, and single or double quotes (or a backslash) keep blanks in one. No expansion.
 */
export function splitCommand(line: string, option: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
      // In double quotes a backslash escapes only \ " $ and `; before any other character it stays.
      else if (c === "\\" && quote === '"' && '\\"$`'.includes(line[i + 1] ?? "-")) word += line[++i] as string;
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      word ??= "";
    } else if (c === "\\" && i + 1 < line.length) {
      word = (word ?? "") + (line[++i] as string);
    } else if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else {
      word = (word ?? "") + c;
    }
  }
  if (quote !== undefined) throw new UsageError(`option ${option}: unclosed ${quote} in ${JSON.stringify(line)}`);
  if (word !== undefined) words.push(word);
  if (words.length === 0) throw new UsageError(`option ${option} needs a command; got ${JSON.stringify(line)}`);
  return words;
}

/**
 * `-x VAR` (the launcher's value of VAR) or `-x VAR=VALUE`, as mpirun: a variable every rank gets, on every host.
 */
export function forwardVariable(spec: string, env: NodeJS.ProcessEnv): [string, string] {
  const eq = spec.indexOf("=");
  const name = eq < 0 ? spec : spec.slice(0, eq);
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
    throw new UsageError(`option -x takes VAR or VAR=VALUE; ${JSON.stringify(name)} is not a variable name`);
  }
  if (name.startsWith("WORKPOOL_")) {
    throw new UsageError(`option -x: ${name} is set by the launcher for each rank, and cannot be forwarded`);
  }
  if (eq >= 0) return [name, spec.slice(eq + 1)];
  const value = env[name];
  if (value === undefined) throw new UsageError(`option -x: ${name} is not set in the launcher's environment`);
  return [name, value];
}
