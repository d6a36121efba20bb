/**
 * What a pool's run sets up around its engine (pool.ts, Pool.run) and takes down when it ends: the check of its
 * concurrency, and what the run watches while it runs (this rank's messaging failing, other ranks dying or
 * leaving, the app's abort signal) together with its reports (the live view, progress). Each watcher fails the
 * engine with an error that names what happened; `watchRun` returns the one function that removes them all.
 */
import type { Communicator } from "../comm/world.ts";
import { liveRun, type LiveRun } from "../control/live.ts";
import { REPORT, report } from "../control/report.ts";
import { AbortError, describe, InvalidArgumentError, RankFailedError } from "../errors.ts";
import { asyncTasksInFlight } from "./executor.ts";
import type { PoolConfig } from "./options.ts";
import type { Engine } from "./runtime.ts";
import type { RunOptions } from "./types.ts";

/** The run's concurrency: its option, else the pool's; a positive integer, and 1 with `retries`. */
export function runConcurrency(options: RunOptions<unknown>, config: PoolConfig): number {
  const concurrency = options.concurrency ?? config.concurrency;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new InvalidArgumentError(
      `run: option \`concurrency\` must be a positive integer; got ${describe(options.concurrency)}`,
    );
  }
  if (concurrency > 1 && config.retries > 0) {
    throw new InvalidArgumentError(
      `run: option \`concurrency\` must be 1 with a pool that has \`retries\` (it commits between tasks); got ${concurrency}`,
    );
  }
  return concurrency;
}

/**
 * Watches the run `live.run` of the pool `live.pool` (in message context `context`) on this rank while `engine`
 * runs it, and reports it to the live view (and its progress, if asked); returns what ends it all, to call once
 * the run has ended.
 */
export function watchRun(
  world: Communicator,
  context: number,
  engine: Engine<unknown>,
  signal: AbortSignal | undefined,
  live: LiveRun,
): () => void {
  const { pool: name, run: epoch, stats } = live;
  // Between messages a run may have nothing the event loop can see: it is not an app that forgot close(). What
  // else wakes it (its timers, its turns of the event loop) the idle watch sees, except async tasks in flight,
  // which may await work Node lists nowhere: with none, its deadlock check counts the run as a wait for messages
  // when nothing else is pending (lib/comm/stall.ts).
  const run = `run ${epoch} of ${name}`;
  const waits = live.loop === undefined ? run : `parallelFor or map (${run})`;
  const release = world.hold(() => (asyncTasksInFlight() > 0 ? undefined : waits));
  // This rank's messaging failed (its receive loop): the run fails here and tells the others.
  const offFailure = world.onFailure((e) => engine.fail(e));
  // Another rank died (the launcher said so). A pool with `retries` survives a worker's; any other fails its
  // run with an error naming the rank. Deaths before this run are told at once: they are not news, and the
  // launcher has heard what was re-dealt for them.
  let replaying = true;
  const offDeath = world.onPeerDeath((rank, why) => {
    const error = new RankFailedError(rank, `${name} run: rank ${rank} died (${why})`);
    if (!engine.onPeerDead) {
      engine.fail(error);
      return;
    }
    const redealt = engine.onPeerDead(rank, error);
    if (redealt !== undefined && !replaying) report({ t: "redealt", pool: name, rank, tasks: redealt });
  });
  replaying = false;
  // A rank that closed its world having begun fewer runs of this pool will never join this one: a run called
  // on only some ranks (`if (rank === 0) await pool.run(...)`, or a loop) fails here naming it, instead of
  // waiting for good while that rank waits in close().
  const offLeave = world.onLeave((rank, progress) => {
    const runs = progress.get(context) ?? 0;
    if (runs >= epoch) return;
    engine.fail(
      new RankFailedError(
        rank,
        `${name} run: rank ${rank} closed its world after ${runs} run(s) of ${name}, and so will never join ` +
          `this one (its run ${epoch} here): every rank must run the pool, or the loop, the same number of times`,
      ),
    );
  });
  const onAbort = () => engine.fail(new AbortError(`run aborted on rank ${world.rank}`, { cause: signal?.reason }));
  if (signal?.aborted) onAbort();
  signal?.addEventListener("abort", onAbort, { once: true });
  const endLive = liveRun(live);
  const progress = REPORT.progress
    ? setInterval(() => {
        report({ t: "progress", pool: name, done: stats.tasksExecuted, queued: engine.queued?.() ?? 0 });
      }, 200)
    : undefined;
  progress?.unref();
  return () => {
    offFailure();
    offDeath();
    offLeave();
    release();
    clearInterval(progress);
    endLive();
    signal?.removeEventListener("abort", onAbort);
  };
}
