import { Coordinator } from "./centralized/coordinator.ts";
import { ResilientCoordinator } from "./centralized/resilient-coordinator.ts";
import { ResilientWorker } from "./centralized/resilient-worker.ts";
import { CentralWorker } from "./centralized/worker.ts";
import { PLAIN, RESILIENT, WorkingCoordinator } from "./centralized/working.ts";
import { DistributedEngine } from "./distributed/engine.ts";
import { ResilientDistributed } from "./distributed/resilient.ts";
import { LocalEngine } from "./local.ts";
import type { Engine, PendingPut, PoolRuntime } from "./runtime.ts";
import type { TaskContext, TaskHandler } from "./types.ts";

/** Picks the engine for this rank from the pool's mode (one registry line per mode). */
export function engineFor<T>(
  rt: PoolRuntime,
  handler: TaskHandler<T>,
  ctx: TaskContext<T>,
  initial: readonly PendingPut<T>[],
): Engine<T> {
  if (rt.size === 1) return new LocalEngine(rt, handler, ctx, initial);
  switch (rt.config.mode) {
    case "centralized": {
      // With retries, the pool survives worker deaths (resilient-protocol.ts); without, the tuned plain one.
      const resilient = rt.config.retries > 0;
      if (rt.rank !== rt.config.coordinator) {
        return resilient
          ? new ResilientWorker<T>(rt, handler, ctx, initial)
          : new CentralWorker<T>(rt, handler, ctx, initial);
      }
      if (rt.config.coordinatorWorks) {
        return new WorkingCoordinator<T>(resilient ? RESILIENT : PLAIN, rt, handler, ctx, initial);
      }
      return resilient ? new ResilientCoordinator<T>(rt, initial) : new Coordinator<T>(rt, initial);
    }
    case "distributed":
      // With retries, the pool survives the death of ranks other than the root (resilient.ts).
      if (rt.config.retries > 0) return new ResilientDistributed<T>(rt, handler, ctx, initial);
      return new DistributedEngine<T>(rt, handler, ctx, initial);
  }
}
