/**
 * What a simulated rank's engine gets, as a real rank's gets it from the pool (lib/pool/pool.ts `run`): a
 * PoolRuntime over the simulation's link (run epoch 1, fresh statistics, an empty reduction, no trace) and a
 * TaskContext for its handler; and what the simulation watches of it: whether its `done` settled, and how.
 * Every simulation (test/helpers/simulation.ts, resilient-sim.ts, surviving-sim.ts, bench/sim/timed.ts) builds
 * its ranks from these, then the engine of its own pool.
 */
import type { PoolConfig, TaskContext } from "../lib/index.ts";
import { emptyStats, type PoolLink, PoolRuntime, Results } from "../lib/internal.ts";

/** Rank `link.rank`'s runtime, for an engine of `config.mode`; its run started at time 1 (before any task). */
export function simRuntime(link: PoolLink, config: PoolConfig): PoolRuntime {
  const stats = emptyStats(link.rank, config.mode);
  stats.startedAt = 1;
  return new PoolRuntime(link, config, 1, stats, Results.of(undefined), undefined);
}

/** A handler's context on rank `rank`: its puts, stop and gifts go where the simulation says. */
export function simContext<T>(
  rank: number,
  put: TaskContext<T>["put"],
  stop: TaskContext<T>["stop"],
  give: TaskContext<T>["give"] = () => {},
): TaskContext<T> {
  return { rank, signal: new AbortController().signal, put, stop, give };
}

/** How a rank's run ended, as its engine's `done` settled: read once the promise has had a turn to settle. */
export class Settlement {
  state: "pending" | "resolved" | "rejected" = "pending";
  error: Error | undefined = undefined;

  constructor(done: Promise<unknown>) {
    done.then(
      () => {
        this.state = "resolved";
      },
      (e: Error) => {
        this.state = "rejected";
        this.error = e;
      },
    );
  }
}
