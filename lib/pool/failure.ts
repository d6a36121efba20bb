import { AbortError, PeerAbortedError, RankFailedError, TaskError, type WorkpoolError } from "../errors.ts";
import type { PoolRuntime } from "./runtime.ts";

/**
 * What ended a run on the rank that sends FAIL, so the others reject with the matching class (errors.ts):
 * `task` a handler threw (TaskError), `abort` the run's signal aborted (PeerAbortedError), `rank` anything
 * else went wrong there (RankFailedError).
 */
export type FailKind = "task" | "abort" | "rank";

/** The body of a FAIL message (both modes). */
export interface FailBody {
  /** The rank the failure happened on (a TaskError's or RankFailedError's own `rank`, else the sender). */
  r: number;
  k: FailKind;
  msg: string;
  /** The task that threw (kind `task`), left out when it cannot be encoded. */
  task?: unknown;
  /** The original error's name, message and stack (where the handler threw, on rank `r`). */
  cn?: string;
  cm?: string;
  cs?: string;
}

/** Rebuilds, on another rank, the error of a run that failed on rank `f.r`. */
export function failFromMessage(f: FailBody): WorkpoolError {
  const cause = new Error(f.cm ?? f.msg);
  if (f.cn) cause.name = f.cn;
  // The stack of rank r's error, not of this rebuilding: it points at the code that failed.
  if (f.cs) cause.stack = f.cs;
  switch (f.k) {
    case "abort":
      return new PeerAbortedError(f.r, f.msg, { cause });
    case "rank":
      return new RankFailedError(f.r, f.msg, { cause });
    default:
      return new TaskError(f.r, f.task, f.msg, { cause });
  }
}

/** The FAIL body that tells the other ranks about `error`, which ended the run on this rank. */
export function failureBody(rank: number, error: Error): FailBody {
  const k: FailKind = error instanceof TaskError ? "task" : error instanceof AbortError ? "abort" : "rank";
  const cause = error.cause instanceof Error ? error.cause : error;
  const r = error instanceof TaskError || error instanceof RankFailedError ? error.rank : rank;
  const body: FailBody = { r, k, msg: error.message, cn: cause.name, cm: cause.message, cs: cause.stack };
  if (error instanceof TaskError) body.task = error.task;
  return body;
}

/** Tells `dests` that the run failed; a task that cannot be encoded is left out of the message. */
export function sendFail(rt: PoolRuntime, dests: Iterable<number>, tag: number, f: FailBody): void {
  for (const d of dests) {
    try {
      rt.send(d, tag, { ...f });
    } catch {
      rt.send(d, tag, { r: f.r, k: f.k, msg: f.msg, cn: f.cn, cm: f.cm, cs: f.cs });
    }
  }
}
