/**
 * Every pool default, and the names of the strategies a pool can be configured with. The names are literal
 * unions that the strategy registries (`balance/registry.ts`, `partner/registry.ts`,
 * `termination/registry.ts`) must satisfy key for key, and the tables of who reads `partner` and `topology`
 * are checked against what each strategy declares it reads (`reads`, test/pool/strategies.test.ts). This
 * module imports no strategy: the strategies' types reach the pool's configuration types, which import the
 * names from here, and the module graph has no cycle, type-only imports included (test/structure). Every list
 * of strategies elsewhere (help text, `workpool compare`, tests, benchmarks) derives from these arrays.
 */
import type { TaskOrder } from "./queue.ts";

export type PoolMode = "centralized" | "distributed";
export const MODES = ["centralized", "distributed"] as const satisfies readonly PoolMode[];
export const ORDERS = ["lifo", "fifo"] as const satisfies readonly TaskOrder[];

/** Distributed: who starts a transfer (one file each in `balance/`). */
export const INITIATIONS = ["receiver", "sender", "diffusion", "ripple", "lifeline"] as const;
export type Initiation = (typeof INITIATIONS)[number];
/**
 * The initiations that pick partners with the `partner` policy (their descriptors read `partner`). The others
 * bring their own graph: diffusion balances with its neighbours in `topology`, Ripple along a spanning tree,
 * lifeline steals from random victims and then waits on its lifelines (a base-4 hypercube).
 */
export const PARTNERED: { readonly [K in Initiation]: boolean } = {
  receiver: true,
  sender: true,
  diffusion: false,
  ripple: false,
  lifeline: false,
};
/** Distributed: whom a rank asks or pushes to (one file each in `partner/`). */
export const PARTNERS = ["round-robin", "random", "ring", "neighbours"] as const;
export type PartnerPolicy = (typeof PARTNERS)[number];
/** Distributed: the graph of the strategies that read `topology` (`topology.ts`). */
export const TOPOLOGIES = ["hypercube", "torus", "ring"] as const;
export type Topology = (typeof TOPOLOGIES)[number];
/** Distributed: how the end of a run is detected (one file each in `termination/`). */
export const TERMINATIONS = ["token-ring", "tree"] as const;
export type TerminationDetector = (typeof TERMINATIONS)[number];

/** The strategies that read `topology` (their descriptors say so): partner policies first, then initiations. */
export const TOPOLOGY_READERS: readonly (
  | { readonly option: "partner"; readonly name: PartnerPolicy }
  | { readonly option: "initiation"; readonly name: Initiation }
)[] = [
  { option: "partner", name: "neighbours" },
  { option: "initiation", name: "diffusion" },
];

/** Whether a distributed configuration reads `topology`: its initiation does, or its partner policy. */
export function readsTopology(c: { readonly initiation: Initiation; readonly partner?: PartnerPolicy }): boolean {
  return TOPOLOGY_READERS.some((r) => (r.option === "initiation" ? r.name === c.initiation : r.name === c.partner));
}

/** One distributed configuration; `partner` only for the initiations that use one (PARTNERED). */
export interface DistributedCombination {
  readonly initiation: Initiation;
  readonly partner?: PartnerPolicy;
  readonly termination: TerminationDetector;
}

/**
 * Every distributed configuration, in registry order: each partnered initiation with every partner policy,
 * each other initiation once, each with every termination detector. `topology` keeps its default here.
 */
export const DISTRIBUTED_COMBINATIONS: readonly DistributedCombination[] = INITIATIONS.flatMap((initiation) =>
  (PARTNERED[initiation] ? PARTNERS : [undefined]).flatMap((partner) =>
    TERMINATIONS.map((termination) => (partner ? { initiation, partner, termination } : { initiation, termination })),
  ),
);

/** A distributed combination as a `--pool` spec. */
export function distributedSpec(c: DistributedCombination): string {
  const partner = c.partner ? `,partner=${c.partner}` : "";
  return `distributed,initiation=${c.initiation}${partner},termination=${c.termination}`;
}

/** A combination's short name: `receiver/random/token-ring`, or `lifeline/tree` for an unpartnered one. */
export function comboName(c: DistributedCombination): string {
  return c.partner ? `${c.initiation}/${c.partner}/${c.termination}` : `${c.initiation}/${c.termination}`;
}

/** The combination a short name (`comboName`) stands for; undefined if it names none. */
export function comboFromName(name: string): DistributedCombination | undefined {
  return DISTRIBUTED_COMBINATIONS.find((c) => comboName(c) === name);
}

/**
 * A pool that names no mode, and sets no option only one mode has (options.ts `impliedMode`), is distributed:
 * every rank runs tasks and steals (receiver-initiated, random partners), which ran the bench's apps at
 * 0.75-0.99 of the machine at `-n` = cores where the centralized pool, whose coordinator only deals (the seed
 * slides' protocol), reached 0.19-0.51 (issue 28).
 */
export const DEFAULT_MODE: PoolMode = "distributed";
export const DEFAULT_ORDER: TaskOrder = "lifo";
export const DEFAULT_COORDINATOR = 0;
/** Centralized: most tasks in one grant; 0 = chosen from measured rates. */
export const DEFAULT_CHUNK = 0;
export const DEFAULT_COORDINATOR_WORKS = false;
/** Loops on the pool: iterations per range; 0 = chosen at run time from measured times (lib/loop/grain.ts). */
export const DEFAULT_GRAIN = 0;
/** Centralized: most tasks a worker keeps of those its handlers put (the rest go to the coordinator). */
export const DEFAULT_KEEP = 65_536;
/** Centralized: worker deaths survived per task (0: any rank's death ends the job, as in MPI). */
export const DEFAULT_RETRIES = 0;
/** Centralized, with retries: copy a straggler's task to an idle worker near the end (first result kept). */
export const DEFAULT_SPECULATE = false;
export const DEFAULT_INITIATION: Initiation = "receiver";
export const DEFAULT_PARTNER: PartnerPolicy = "random";
export const DEFAULT_TOPOLOGY: Topology = "hypercube";
export const DEFAULT_TERMINATION: TerminationDetector = "token-ring";
/** Distributed, receiver-initiated: ask for work below this many queued tasks. */
export const DEFAULT_LOW_WATER = 2;
/** Distributed, sender-initiated: push work above this many queued tasks. */
export const DEFAULT_HIGH_WATER = 16;
export const DEFAULT_SEED = 1;
/**
 * Async tasks a rank keeps in flight: enough for an I/O app that names no option to overlap its waits (a read
 * from disk, a request), few enough that a rank holds little more than it runs (options.ts `concurrency`).
 */
export const DEFAULT_CONCURRENCY = 16;
