import { TaskError } from "../errors.ts";
import type { PoolRuntime } from "./runtime.ts";

export interface FailBody {
  r: number;
  msg: string;
  task?: unknown;
}

/** Rebuilds, on another rank, the TaskError of a handler that failed on rank `r`. */
export function failFromMessage(f: FailBody): TaskError {
  return new TaskError(f.r, f.task, f.msg, { cause: new Error(f.msg) });
}

export function failureBody(rank: number, error: Error): FailBody {
  const task = (error as { task?: unknown }).task;
  return { r: (error as { rank?: number }).rank ?? rank, msg: error.message, task };
}

/** Tells `dests` that the run failed; a task that cannot be encoded is left out of the message. */
export function sendFail(rt: PoolRuntime, dests: Iterable<number>, tag: number, f: FailBody): void {
  for (const d of dests) {
    try {
      rt.send(d, tag, { ...f });
    } catch {
      rt.send(d, tag, { r: f.r, msg: f.msg });
    }
  }
}
