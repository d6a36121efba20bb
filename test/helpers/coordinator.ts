/**
 * A plain centralized coordinator on rank 0, in-process, its messages recorded instead of sent: the tests drive
 * it message by message (test/pool/coordinator.test.ts, coordinator-standby.test.ts).
 */
import { Coordinator } from "../../lib/pool/centralized/coordinator.ts";
import { type PoolOptions, resolvePoolConfig } from "../../lib/pool/options.ts";
import { Results } from "../../lib/pool/results.ts";
import { type PoolLink, PoolRuntime } from "../../lib/pool/runtime.ts";
import { emptyStats } from "../../lib/pool/types.ts";

export interface Sent {
  dest: number;
  tag: number;
  body: Record<string, unknown>;
}

/**
 * A coordinator on rank 0 of `size` holding tasks 0..`initial`-1, with the centralized pool's `options`. Not
 * started: `c.start()` arms its timers (a working coordinator's SELF_WAIT_MS).
 */
export function recordingCoordinator(
  initial: number,
  size = 3,
  options: Omit<PoolOptions, "mode"> = {},
): { c: Coordinator<number>; sent: Sent[] } {
  const sent: Sent[] = [];
  const link: PoolLink = {
    rank: 0,
    size,
    send(dest, tag, body) {
      sent.push({ dest, tag, body });
      return 0;
    },
  };
  const config = resolvePoolConfig({ ...options, mode: "centralized" } as PoolOptions, undefined, size);
  const rt = new PoolRuntime(link, config, 1, emptyStats(0, "centralized"), Results.of(undefined), undefined);
  const tasks = Array.from({ length: initial }, (_, i) => ({ task: i, priority: 0, to: undefined }));
  return { c: new Coordinator<number>(rt, tasks), sent };
}
