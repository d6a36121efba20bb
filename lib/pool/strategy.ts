/**
 * The contract between a distributed pool's engine (`distributed/engine.ts`) and its strategies: balancing
 * initiations (`balance/`), partner policies (`partner/`) and termination detectors (`termination/`).
 *
 * A strategy is one file: it exports a descriptor (a one-line summary for help and docs, the kinds of
 * message it sends, and a factory) that its folder's registry names. The engine numbers every kind of every
 * strategy in the run's configuration (the same on every rank, since every rank has the same configuration),
 * sends by kind, and routes each arriving tag to the strategy that declared it. So a new strategy touches its
 * own file, one registry line, and its name in `config.ts` (with, if it reads `partner` or `topology`, its
 * row in PARTNERED or TOPOLOGY_READERS there): the registries' types and test/pool/strategies.test.ts hold
 * those against the strategies; every other list (`--help`, `workpool compare`'s defaults, the option checks,
 * benches, tests) derives from config.ts, and tests hold the docs' lists against it.
 *
 * Everything runs on the rank's one thread: a strategy's calls happen between tasks, never during one.
 * Strategies must not depend on the order in which messages arrive (test/pool/simulation.test.ts runs them
 * under adversarial, seeded schedules).
 */
import type { Topology } from "./config.ts";
import type { TaskKey } from "./keys.ts";
import type { PoolRuntime } from "./runtime.ts";

/** Most tasks in one task message (TRANSFER, PUSH, ...), so one message stays a reasonable size. */
export const MAX_BATCH = 4096;

/** Cancels a timer made by `DistributedHost.after`. */
export type Cancel = () => void;

/** What a strategy sees of the rank's engine. */
export interface DistributedHost {
  readonly rt: PoolRuntime;
  /**
   * Set by a balancer that may hold the rank back between tasks to deal its tasks, or to offer them once
   * (Balancer `standBy`): only then does the engine ask it before each task, which would cost a tiny task a
   * good part of its time.
   */
  dealing: boolean;
  /** The rank that starts token rounds, roots the tree, and announces termination. */
  readonly root: number;
  /** Tasks queued on this rank, movable and pinned (not counting the one running). */
  readonly load: number;
  /** Tasks queued on this rank that balancing may move elsewhere. */
  readonly movable: number;
  /** The priority of the movable task this rank would run or give next (0 with none, or none given). */
  readonly topPriority: number;
  /**
   * True while a task runs on this rank (the balancer hears messages while a task awaits). Between tasks it is
   * false, and the rank is about to run a queued task if it has one: either way, a rank with `load` queued has
   * `load - (running ? 0 : 1)` tasks beyond the one it runs next.
   */
  readonly running: boolean;
  /**
   * True while the sync tasks this rank runs are long (Executor `longTasks`): it answers no message while one
   * runs, so what it keeps queued waits a whole task for any rank that asks.
   */
  readonly longTasks: boolean;
  /** Mean time of the tasks this rank has run in this run, in ms (0 before any). */
  readonly meanTaskMs: number;
  /**
   * True while this rank is passive: no task queued or running, and no task waiting to be sent. Only a task
   * message can make a passive rank active again (or, outside the model, a put from the app).
   */
  readonly passive: boolean;
  /** When this rank last finished a task, or started the run if it ran none (epoch ms). */
  readonly lastActivityAt: number;
  /** Sends a control message of one of the strategy's declared `messages` kinds. */
  send(dest: number, kind: string, body: Record<string, unknown>): void;
  /**
   * Moves up to `n` movable tasks to `dest` as one task message of one of the strategy's declared
   * `taskMessages` kinds; returns how many it moved. Tasks without locality keys leave from the oldest end
   * (every other one in a lifo queue: queue.ts `giveAlternate`). Keyed
   * tasks (PutOptions.key) leave in whole groups of one key: the keys in `prefer` first (the receiver's
   * `recentKeys`, when the strategy has them: a request can carry them), this rank's recently run keys last
   * (queue.ts `give`). It moves at least one task when `n` >= 1 and `movable` >= 1. `extra` travels in the
   * message's body beside the tasks (keys other than the engine's own `t`, `q`, `k`, `s` and `f`) and reaches
   * the receiver's `received`.
   */
  sendMovable(
    dest: number,
    kind: string,
    n: number,
    prefer?: readonly unknown[],
    extra?: Readonly<Record<string, unknown>>,
  ): number;
  /**
   * The locality keys of the tasks this rank ran most recently (a few, most recent first; a copy, so it may
   * travel in a message), or an empty array when none of its tasks had a key.
   */
  recentKeys(): readonly TaskKey[];
  /** Calls `fn` after `ms` milliseconds (a timer the simulation controls), unless cancelled. */
  after(ms: number, fn: () => void): Cancel;
  /** The time now, in ms, on the clock of `after` (the simulation's, in one). */
  now(): number;
  /** Root only: the pool has terminated; tells every rank. `lastActivityAt` is the latest on any rank. */
  terminate(lastActivityAt: number): void;
  /** Ends the wait that the balancer's `open` began: the rank runs its first task now. */
  release(): void;
}

/** A pool option that a strategy may read besides the one that names it. */
export type StrategyOption = "partner" | "topology";

/** What every strategy descriptor has. */
export interface StrategyInfo {
  /** One line for `workpool launch --help`, `workpool compare` and the docs. */
  readonly summary: string;
  /** Kinds of control message the strategy sends and receives; each gets a tag of its own. */
  readonly messages: readonly string[];
  /**
   * The pool options it reads besides its own (none if left out): an initiation that picks partners with the
   * `partner` policy reads `partner`; one that balances over the `topology` graph reads `topology`. Setting
   * an option that no strategy of the pool reads is a ConfigError (options.ts).
   */
  readonly reads?: readonly StrategyOption[];
}

// ---- balancing initiation ----

/**
 * Load balancing: decides when this rank asks for work or gives it away, and answers the balancing messages
 * of other ranks. The engine calls `check` whenever its queue holds fewer than `low` or more than `high`
 * tasks (after each task, when it goes idle), so `check` must be cheap when it has nothing to do.
 */
export interface Balancer {
  /** `check` is called while the local queue holds fewer tasks than this (read before every call). */
  readonly low: number;
  /** `check` is called while the local queue holds more tasks than this (read before every call). */
  readonly high: number;
  /** Looks at the local load and acts: asks for work, or pushes some. */
  check(): void;
  /** A control message of one of the strategy's `messages` kinds. */
  onMessage(source: number, kind: string, body: Record<string, unknown>): void;
  /**
   * A task message of `kind` (one of this strategy's `taskMessages`, or the engine's `pinned`) from `source`
   * brought `count` tasks; `loadBefore` was the queue just before they arrived; `body` is the message (with what
   * the sender's `extra` put in it).
   */
  received(source: number, kind: string, count: number, loadBefore: number, body: Record<string, unknown>): void;
  /** The run is over: cancels timers; later calls do nothing. */
  stop(): void;
  /**
   * Called once, before this rank runs its first task of the run. True if the balancer first offers work to
   * other ranks and the rank should wait until it calls `host.release()` (it must, within a bounded time);
   * false (or no method) to start at once.
   */
  open?(): boolean;
  /**
   * Called before each further task while the rank holds tasks. True if the rank should not run one now but
   * wait, active (it holds tasks) and answering messages, until the balancer calls `host.release()` (it must,
   * within a bounded time); false (or no method) to run the task.
   */
  standBy?(): boolean;
}

export interface InitiationStrategy extends StrategyInfo {
  /** Kinds of task message the strategy sends with `sendMovable` (each counted by the detectors). */
  readonly taskMessages: readonly string[];
  create(host: DistributedHost, partner: Partner): Balancer;
}

// ---- partner policy ----

/** Whom a rank asks for work (receiver-initiated) or pushes work to (sender-initiated). */
export interface Partner {
  /** The next rank to contact; never this rank. */
  next(): number;
  /**
   * How many distinct ranks `next` cycles through: after this many refusals in a row, every partner has
   * said no and the asker backs off.
   */
  readonly span: number;
  /** The one rank whose `next` is always this rank, if the policy has one (`ring`: rank - 1). */
  readonly previous?: number;
}

export interface PartnerStrategy {
  readonly summary: string;
  /** The pool options it reads besides `partner` (StrategyInfo `reads`): `topology`, or none. */
  readonly reads?: readonly StrategyOption[];
  /**
   * The policy of rank `rank` in a job of `size` ranks (size >= 2); `seed` and `topology` are the pool's
   * options of those names.
   */
  create(rank: number, size: number, seed: number, topology: Topology): Partner;
}

// ---- termination detection ----

/**
 * Tells the root when no task is queued, running or in transit anywhere, without a coordinator watching
 * every task. The engine reports every task message it sends and receives, and every time the rank becomes
 * passive; the detector exchanges its own messages and calls `host.terminate()` on the root when it has
 * proved termination.
 */
export interface Detector {
  /** A number every task message carries (field `s`), read when it is sent; 0 if the detector needs none. */
  readonly stamp: number;
  /** A task message to `dest` was just sent. */
  sent(dest: number): void;
  /** A task message from `source`, carrying `stamp`, just arrived (its tasks are queued; the rank is active). */
  received(source: number, stamp: number): void;
  /** The rank has just become passive. */
  idle(): void;
  /** A control message of one of the detector's `messages` kinds. */
  onMessage(source: number, kind: string, body: Record<string, unknown>): void;
}

export interface DetectionStrategy extends StrategyInfo {
  create(host: DistributedHost): Detector;
}
