import { Coordinator } from "./centralized/coordinator.ts";
import { CentralWorker } from "./centralized/worker.ts";
import { WorkingCoordinator } from "./centralized/working.ts";
import { DistributedEngine } from "./distributed/engine.ts";
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
    case "centralized":
      if (rt.rank !== rt.config.coordinator) return new CentralWorker<T>(rt, handler, ctx, initial);
      return rt.config.coordinatorWorks
        ? new WorkingCoordinator<T>(rt, handler, ctx, initial)
        : new Coordinator<T>(rt, initial);
    case "distributed":
      return new DistributedEngine<T>(rt, handler, ctx, initial);
  }
}
