import type { Deferred } from "../../deferred.ts";
import { failFromMessage, failureBody, sendFail } from "../failure.ts";
import { type WireResult, withResult } from "../results.ts";
import type { PoolRuntime } from "../runtime.ts";
import { type Fail, TAG } from "./plain-protocol.ts";

/**
 * The coordinator's word that ends a worker's run, the same in both centralized protocols (worker.ts and
 * resilient-worker.ts): DONE (the run's result), FAIL (the error of the rank it failed on) or STOPPED (a task's
 * `ctx.stop`). Settles `settled` as the word says and returns true; false for any other tag. The worker then
 * stops and wakes its loop.
 */
export function settleOnWord(
  rt: PoolRuntime,
  settled: Deferred<void>,
  tag: number,
  body: Record<string, unknown>,
): boolean {
  if (tag === TAG.done) {
    rt.results.final = body.r as WireResult;
    settled.resolve();
  } else if (tag === TAG.fail) settled.reject(failFromMessage(body as unknown as Fail));
  else if (tag === TAG.stopped) {
    rt.endStopped(body.r as WireResult);
    settled.resolve();
  } else return false;
  return true;
}

/** A task on this worker called `ctx.stop(result)`: the coordinator decides (the first STOP wins). */
export function askToStop(rt: PoolRuntime, result: WireResult): void {
  rt.send(rt.config.coordinator, TAG.stop, withResult({}, result));
}

/** This worker's run failed here: the coordinator hears why (and tells the others); `settled` rejects. */
export function failToCoordinator(rt: PoolRuntime, settled: Deferred<void>, error: Error): void {
  sendFail(rt, [rt.config.coordinator], TAG.fail, failureBody(rt.rank, error));
  settled.reject(error);
}
