import { RankFailedError, type World } from "workpool";

/** The tag of the lowest survivor's "done" message: at the top of the tag range, clear of the apps' own. */
const DONE_TAG = 2 ** 31 - 2;

/** The lowest rank of `world` that this process does not know dead. */
function lowestAlive(world: World): number {
  const dead = new Set(world.deadRanks);
  let rank = 0;
  while (dead.has(rank)) rank++;
  return rank;
}

/**
 * Runs `report` (printing the result, verifying it) on exactly one rank that is alive: the lowest rank not
 * known dead. Call it on every rank, after a run whose result every rank has (a pool run's `result`): a job that
 * survived the death of rank 0 (a pool with `retries` whose coordinator is another rank) still prints its result
 * once, where an app that printed on rank 0 printed nothing and ended 0. The others wait until the reporting
 * rank says it is done; if it dies first, their receive rejects (RankFailedError) and the next lowest takes over.
 * A death notice can come late, but never wrongly (deadRanks): so two ranks never both report, and one always
 * does unless every rank dies.
 */
export async function onLowestSurvivor(world: World, report: () => void | Promise<void>): Promise<void> {
  for (;;) {
    const lowest = lowestAlive(world);
    if (lowest === world.rank) {
      await report();
      const dead = new Set(world.deadRanks);
      const told: Promise<void>[] = [];
      // Only the ranks above can be waiting; one that died meanwhile needs no word.
      for (let r = world.rank + 1; r < world.size; r++) {
        if (!dead.has(r)) told.push(world.send(r, DONE_TAG, null).catch(ignoreDeath));
      }
      await Promise.all(told);
      return;
    }
    try {
      await world.recv({ source: lowest, tag: DONE_TAG });
      return;
    } catch (e) {
      // Look again only if `lowest` died: a world that failed otherwise would reject the same receive for ever.
      if (!(e instanceof RankFailedError) || !world.deadRanks.includes(lowest)) throw e;
    }
  }
}

function ignoreDeath(e: unknown): void {
  if (!(e instanceof RankFailedError)) throw e;
}
