import { TaskError } from "../errors.ts";
import type { PoolRuntime } from "./runtime.ts";

export interface FailBody {
  r: number;
  msg: string;
  task?: unknown;
  /** The original error's name and message. */
  cn?: string;
  cm?: string;
}

/** Rebuilds, on another rank, the TaskError of a handler that failed on rank `r`. */
export function failFromMessage(f: FailBody): TaskError {
  const cause = new Error(f.cm ?? f.msg);
  if (f.cn) cause.name = f.cn;
  return new TaskError(f.r, f.task, f.msg, { cause });
}

export function failureBody(rank: number, error: Error): FailBody {
  const task = (error as { task?: unknown }).task;
  const cause = error.cause instanceof Error ? error.cause : error;
  return { r: (error as { rank?: number }).rank ?? rank, msg: error.message, task, cn: cause.name, cm: cause.message };
}

/** Tells `dests` that the run failed; a task that cannot be encoded is left out of the message. */
export function sendFail(rt: PoolRuntime, dests: Iterable<number>, tag: number, f: FailBody): void {
  for (const d of dests) {
    try {
      rt.send(d, tag, { ...f });
    } catch {
      rt.send(d, tag, { r: f.r, msg: f.msg, cn: f.cn, cm: f.cm });
    }
  }
}
