import { ConfigError, describe } from "../errors.ts";
import {
  DEFAULT_CHUNK,
  DEFAULT_CONCURRENCY,
  DEFAULT_COORDINATOR,
  DEFAULT_COORDINATOR_WORKS,
  DEFAULT_GRAIN,
  DEFAULT_HIGH_WATER,
  DEFAULT_INITIATION,
  DEFAULT_KEEP,
  DEFAULT_LOW_WATER,
  DEFAULT_MODE,
  SURVIVING_INITIATIONS,
  DEFAULT_ORDER,
  DEFAULT_PARTNER,
  DEFAULT_RETRIES,
  DEFAULT_SPECULATE,
  DEFAULT_SEED,
  DEFAULT_TERMINATION,
  DEFAULT_TOPOLOGY,
  INITIATIONS,
  type Initiation,
  MODES,
  ORDERS,
  PARTNERED,
  PARTNERS,
  readsTopology,
  type PartnerPolicy,
  type PoolMode,
  TERMINATIONS,
  type TerminationDetector,
  TOPOLOGIES,
  TOPOLOGY_READERS,
  type Topology,
} from "./config.ts";
import type { TaskOrder } from "./queue.ts";

export type { Initiation, PartnerPolicy, PoolMode, TerminationDetector, Topology } from "./config.ts";

/** Options of a pool, from code (`world.pool(options)`) or from `workpool launch --pool SPEC`. */
export interface PoolOptions {
  /**
   * Where the task queue lives: "distributed" (every rank holds tasks and balances with the others) or
   * "centralized" (one coordinator holds the queue; implied by options only it has, such as `retries` or
   * `keep`). @default DEFAULT_MODE ("distributed")
   */
  readonly mode?: PoolMode;
  /**
   * Most async tasks a rank keeps in flight: when a handler returns a promise (an `await readFile`, a `fetch`),
   * the rank starts its next queued task instead of waiting, up to this many at once, and a rank with tasks in
   * flight is busy (it neither ends the run nor counts as idle for balancing) until they settle. Sync handlers
   * are not affected: they run one after another, as ever. Each task still runs exactly once, and its value,
   * puts, priority, `ctx.stop` and `ctx.signal` behave as with one at a time; what changes is that tasks of one
   * rank interleave at their awaits, so handlers sharing mutable state must not assume one runs alone.
   *
   * How to pick it: about the time a task waits divided by the CPU time it spends (Little's law), so that the
   * rank's core stays busy; for files, Node's thread pool (UV_THREADPOOL_SIZE, 4 by default) caps how many reads
   * the disk sees at once; for a remote service, what it tolerates. 1 runs async tasks one at a time. A
   * centralized pool with `retries` runs one at a time per worker (its exactly-once commits are made between
   * tasks): setting it above 1 there is an error. @default 16
   */
  readonly concurrency?: number;
  /**
   * In what order a rank runs its own queued tasks of equal priority: `lifo`, newest first (work-first: a
   * task tree is walked depth-first, as a plain loop with a stack would, so memory stays bounded by depth x
   * branching, and work given to other ranks comes from the oldest end, where the big subtrees are, every
   * other task there), or
   * `fifo`, oldest first (breadth-first: every task put is held until its turn; pick it when tasks must
   * start roughly in the order they were put). Priorities come first in both. @default "lifo"
   */
  readonly order?: TaskOrder;
  /** Centralized: the rank that holds the queue. @default 0 */
  readonly coordinator?: number;
  /** Centralized: most tasks handed out in one grant; 0 means chosen from measured rates. @default 0 */
  readonly chunk?: number;
  /**
   * Centralized: the coordinator rank also runs tasks, between dealing them, so a job of one rank per core
   * keeps every core working (`-n 2` = two workers). Off, the coordinator only deals. @default false
   */
  readonly coordinatorWorks?: boolean;
  /**
   * Centralized: most tasks a worker keeps, and runs itself, of those its handlers (or the app on its rank)
   * put; beyond that the oldest go to the coordinator. A worker also hands the coordinator about half of
   * what it keeps when the coordinator asks for it, for workers that have run dry. 0: every put goes to the
   * coordinator at once, as in the seed slides. @default 65536
   */
  readonly keep?: number;
  /**
   * Survive the death of worker ranks (killed, crashed, their host lost, silent past the launcher's
   * `--heartbeat`). Centralized: the coordinator re-deals every task a dead worker held, and what the worker did
   * since its last commit (at most ~100 ms of work) is done again, so each task's value and puts count
   * exactly once. A task known to be running on `retries` workers that died fails the run, naming it (the
   * first death cannot be pinned on it, so it kills `retries + 1` workers). The coordinator's death still ends
   * the job (nothing replicates its queue). Distributed (name the mode: `retries` alone means centralized;
   * initiation `receiver` or `lifeline`): any value > 0 makes every rank commit to rank 0's ledger, which
   * re-deals a dead rank's tasks; rank 0's death ends the job; no task is blamed for deaths. 0: any rank's death
   * ends the job. Needs `workpool launch` (which tells the ranks of deaths). @default 0
   */
  readonly retries?: number;
  /**
   * Centralized, with `retries`: rescission for time (seed 004). Near the end, when a worker waits with nothing
   * to do and another has been running its last task for more than twice the idle one's mean task time, the
   * coordinator deals a copy of that task to the idle worker and keeps whichever completes first; the other's
   * value and puts are discarded, so the result is still exact. Only for tasks whose effects beyond their
   * returned value and puts are idempotent (a task may run twice). @default false
   */
  readonly speculate?: boolean;
  /** Distributed: who starts a transfer. @default "receiver" */
  readonly initiation?: Initiation;
  /**
   * Distributed, receiver and sender initiations: how a rank picks the partner it asks or pushes to (the other
   * initiations bring their own graphs; setting it with them is an error). @default "random"
   */
  readonly partner?: PartnerPolicy;
  /** Distributed: termination detector. @default "token-ring" */
  readonly termination?: TerminationDetector;
  /**
   * Distributed: the graph whose neighbours `partner: "neighbours"` and `initiation: "diffusion"` use: a
   * hypercube (rank r and r xor 2^k), a 2-D torus (rows x columns, the most square factoring of the size), or
   * a ring. Setting it with other strategies is an error. @default "hypercube"
   */
  readonly topology?: Topology;
  /** Distributed, receiver-initiated: ask for work when the local queue holds fewer tasks. @default 2 */
  readonly lowWater?: number;
  /**
   * Distributed, sender-initiated: offer work while more movable tasks than this are queued; take offered work
   * while at most this many are (the low default spreads tree searches, whose queues stay short). @default 1
   */
  readonly highWater?: number;
  /** Seed for random partner choice (each rank adds its rank). @default 1 */
  readonly seed?: number;
  /**
   * Loops on this pool (`forEach`, and `parallelFor` on the world's loop pool): iterations per range, fixed,
   * for every loop that gives no `grain` of its own; `--pool distributed,grain=64` compares a fixed grain
   * with the automatic one without touching the app. 0: chosen at run time from measured iteration times
   * (docs/loops.md). @default 0
   */
  readonly grain?: number;
}

export type PoolConfig = Required<PoolOptions>;

const KEYS: Record<keyof PoolOptions, PoolMode | "both"> = {
  mode: "both",
  concurrency: "both",
  order: "both",
  coordinator: "centralized",
  keep: "centralized",
  chunk: "centralized",
  coordinatorWorks: "centralized",
  retries: "both",
  speculate: "centralized",
  initiation: "distributed",
  partner: "distributed",
  termination: "distributed",
  topology: "distributed",
  lowWater: "distributed",
  highWater: "distributed",
  seed: "both",
  grain: "both",
};

const NUMERIC = new Set<keyof PoolOptions>([
  "concurrency",
  "coordinator",
  "chunk",
  "keep",
  "retries",
  "lowWater",
  "highWater",
  "seed",
  "grain",
]);

function oneOf<T extends string>(key: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== "string" || !allowed.includes(value as T)) {
    throw new ConfigError(
      `pool option \`${key}\` must be one of ${allowed.join(", ")}; got \`${String(describe(value)).replaceAll('"', "")}\``,
    );
  }
  return value as T;
}

/** A switch: true or false in code, `true` or `false` in a `--pool` spec. */
function bool(key: string, value: unknown): boolean {
  if (value === true || value === "true") return true;
  if (value === false || value === "false") return false;
  throw new ConfigError(`pool option \`${key}\` must be true or false; got ${describe(value)}`);
}

function nonNegativeInt(key: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    throw new ConfigError(`pool option \`${key}\` must be a non-negative integer; got ${describe(value)}`);
  }
  return value;
}

export function positiveInt(key: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
    throw new ConfigError(`pool option \`${key}\` must be a positive integer; got ${describe(value)}`);
  }
  return value;
}

/** Parses `centralized,key=value,...` or `distributed,key=value,...` (the `--pool` syntax). */
export function parsePoolSpec(spec: string): PoolOptions {
  const parts = spec.split(",").map((p) => p.trim());
  const head = parts.shift() ?? "";
  const out: Record<string, unknown> = {};
  if (head.includes("=")) parts.unshift(head);
  else out.mode = oneOf("mode", head, MODES);
  for (const [i, part] of parts.entries()) {
    // A trailing comma is harmless; an empty part between two is a typo (a key left out).
    if (part === "" && i === parts.length - 1) continue;
    const eq = part.indexOf("=");
    if (eq <= 0)
      throw new ConfigError(`pool spec ${JSON.stringify(spec)}: expected key=value, got ${JSON.stringify(part)}`);
    const key = part.slice(0, eq);
    const raw = part.slice(eq + 1);
    if (!(key in KEYS)) {
      throw new ConfigError(
        `pool spec ${JSON.stringify(spec)}: unknown key \`${key}\` (known: ${Object.keys(KEYS).join(", ")})`,
      );
    }
    // `centralized,mode=distributed` would silently be whichever came last.
    if (key in out) throw new ConfigError(`pool spec ${JSON.stringify(spec)}: \`${key}\` is given twice`);
    out[key] =
      NUMERIC.has(key as keyof PoolOptions) && raw.trim() !== "" && !Number.isNaN(Number(raw)) ? Number(raw) : raw;
  }
  return out as PoolOptions;
}

/**
 * The mode that options naming none imply: centralized if they set an option only centralized pools have
 * (`retries`, `keep`, ...), distributed if one only distributed pools have, else undefined (DEFAULT_MODE).
 */
export function impliedMode(options: PoolOptions): PoolMode | undefined {
  const set = (Object.keys(options) as (keyof PoolOptions)[]).filter((k) => options[k] !== undefined);
  // `retries` alone still means centralized, the pool that survives deaths without naming a mode (README).
  if (set.some((k) => KEYS[k] === "centralized" || k === "retries")) return "centralized";
  if (set.some((k) => KEYS[k] === "distributed")) return "distributed";
  return undefined;
}

/** RunOptions that are no pool option (`concurrency` is both). */
const RUN_ONLY: readonly string[] = ["reduce", "gather", "signal"];

/**
 * Resolves options against the launcher's spec and the defaults, and validates them all up front.
 * Options given in code override the spec key by key; a code `mode` different from the spec's drops the spec.
 */
export function resolvePoolConfig(
  options: PoolOptions | undefined,
  spec: string | undefined,
  size: number,
): PoolConfig {
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    throw new ConfigError(`pool options must be an object; got ${describe(options)}`);
  }
  const fromSpec = spec ? parsePoolSpec(spec) : {};
  const code = options ?? {};
  for (const key of Object.keys(code)) {
    if (key in KEYS) continue;
    // An option of a run given to the pool, the usual slip (`world.pool({ reduce })`): said where it goes.
    const where = RUN_ONLY.includes(key) ? `: it is an option of a run, \`pool.run(handler, { ${key} })\`` : "";
    throw new ConfigError(`unknown pool option \`${key}\`${where} (known: ${Object.keys(KEYS).join(", ")})`);
  }
  const specMode = fromSpec.mode ?? impliedMode(fromSpec) ?? impliedMode(code) ?? DEFAULT_MODE;
  const merged: PoolOptions =
    code.mode !== undefined && code.mode !== specMode ? { ...code } : { ...fromSpec, ...code };
  const mode = oneOf("mode", merged.mode ?? impliedMode(merged) ?? DEFAULT_MODE, MODES);
  for (const key of Object.keys(merged) as (keyof PoolOptions)[]) {
    const where = KEYS[key];
    if (merged[key] !== undefined && where !== "both" && where !== mode) {
      throw new ConfigError(`pool option \`${key}\` applies to ${where} pools only; this pool is ${mode}`);
    }
  }
  const retries = nonNegativeInt("retries", merged.retries ?? DEFAULT_RETRIES);
  const concurrency = positiveInt("concurrency", merged.concurrency ?? (retries > 0 ? 1 : DEFAULT_CONCURRENCY));
  if (concurrency > 1 && retries > 0) {
    throw new ConfigError(
      `pool option \`concurrency\` must be 1 with \`retries\` (a resilient pool commits between tasks, so it runs one ` +
        `at a time per worker); got ${concurrency}`,
    );
  }
  const config: PoolConfig = {
    mode,
    concurrency,
    order: oneOf("order", merged.order ?? DEFAULT_ORDER, ORDERS),
    coordinator: nonNegativeInt("coordinator", merged.coordinator ?? DEFAULT_COORDINATOR),
    chunk: nonNegativeInt("chunk", merged.chunk ?? DEFAULT_CHUNK),
    coordinatorWorks: bool("coordinatorWorks", merged.coordinatorWorks ?? DEFAULT_COORDINATOR_WORKS),
    keep: nonNegativeInt("keep", merged.keep ?? DEFAULT_KEEP),
    retries,
    speculate: bool("speculate", merged.speculate ?? DEFAULT_SPECULATE),
    initiation: oneOf("initiation", merged.initiation ?? DEFAULT_INITIATION, INITIATIONS),
    partner: oneOf("partner", merged.partner ?? DEFAULT_PARTNER, PARTNERS),
    termination: oneOf("termination", merged.termination ?? DEFAULT_TERMINATION, TERMINATIONS),
    topology: oneOf("topology", merged.topology ?? DEFAULT_TOPOLOGY, TOPOLOGIES),
    lowWater: nonNegativeInt("lowWater", merged.lowWater ?? DEFAULT_LOW_WATER),
    highWater: nonNegativeInt("highWater", merged.highWater ?? DEFAULT_HIGH_WATER),
    seed: nonNegativeInt("seed", merged.seed ?? DEFAULT_SEED),
    grain: nonNegativeInt("grain", merged.grain ?? DEFAULT_GRAIN),
  };
  if (config.speculate && config.retries === 0) {
    throw new ConfigError(
      "pool option `speculate` needs `retries` > 0: copies of a task are told apart by the ledger that pool keeps",
    );
  }
  if (mode === "distributed") {
    if (config.retries > 0 && !SURVIVING_INITIATIONS.includes(config.initiation)) {
      throw new ConfigError(
        `pool option \`retries\` needs initiation ${SURVIVING_INITIATIONS.join(" or ")} in a distributed pool ` +
          `(their requests are answered on a dead partner's behalf); got initiation \`${config.initiation}\``,
      );
    }
    // An option the configured strategies do not read is a mistake to report, not to ignore.
    if (merged.partner !== undefined && !PARTNERED[config.initiation]) {
      const partnered = INITIATIONS.filter((i) => PARTNERED[i]).join(" and ");
      throw new ConfigError(
        `pool option \`partner\` applies to the ${partnered} initiations only; initiation ${config.initiation} picks its own partners`,
      );
    }
    if (merged.topology !== undefined && !readsTopology(config)) {
      const readers = TOPOLOGY_READERS.map((r) => `${r.option} ${r.name}`);
      throw new ConfigError(
        `pool option \`topology\` applies to ${readers.join(" and ")} only; this pool uses ${readers.length === 2 ? "neither" : "none of them"}`,
      );
    }
  }
  if (config.coordinator >= size) {
    throw new ConfigError(`pool option \`coordinator\` must be a rank in 0..${size - 1}; got ${config.coordinator}`);
  }
  return Object.freeze(config);
}
