import { RankFailedError } from "../errors.ts";
import type { ValueName } from "./codec.ts";
import type { CollectiveChannel } from "./collectives.ts";
import type { Router } from "./router.ts";
import { SEQUENCE_WRAP } from "./contexts.ts";

/** The collectives by kind (their `call`): its index + 1 goes above the sequence number; 0 for any other. */
const KINDS: ReadonlyMap<string, number> = new Map(
  [
    "barrier",
    "bcast",
    "reduce",
    "allreduce",
    "gather",
    "allgather",
    "scatter",
    "alltoall",
    "scan",
    "exscan",
    "reduceScatter",
  ].map((call, i) => [call, i + 1]),
);

/** The tag on the wire of a message of collective `call` at sequence number `tag` (see SEQUENCE_WRAP). */
function wireTag(tag: number, call: string): number {
  return (KINDS.get(call) ?? 0) * SEQUENCE_WRAP + tag;
}

/** What a collective channel needs of its communicator (world.ts): its ranks, its sends and its leavers. */
export interface ChannelOwner {
  readonly rank: number;
  readonly size: number;
  sendIn(context: number, dest: number, tag: number, data: unknown, call: string, name?: ValueName): Promise<void>;
  onLeave(listener: (rank: number, progress: ReadonlyMap<number, number>) => void): () => void;
}

/**
 * The collective channel of a communicator (`owner`), in its collective context `context`. With `counted` (the
 * world's), it counts the collectives begun here, which every other rank learns when this one closes its world;
 * a rank of this communicator that closed having begun fewer than the one this rank is in will never join it (a
 * collective called on only some ranks), so that one, and every later one, rejects with RankFailedError naming
 * it, instead of waiting for good. Collectives run one at a time per rank and communicator, so the one a
 * receive belongs to is the last begun. Only the world's collectives are counted so: a job may make a million
 * communicators, and every rank's close would carry all their counts.
 */
export function collectiveChannel(
  owner: ChannelOwner,
  router: Router,
  context: number,
  counted: boolean,
): CollectiveChannel {
  let seq = 0;
  let begun = 0;
  /** The member that closed having begun the fewest collectives here, and how many. */
  let leaver: { rank: number; begun: number } | undefined;
  // (No counts in the message: a collective may take several sequence numbers, which are what is counted.)
  const leftError = (call: string) => {
    const { rank } = leaver as { rank: number; begun: number };
    return new RankFailedError(
      rank,
      `${call}: rank ${rank} closed its world without joining this collective, and so never will: every rank ` +
        "must call the same collectives, in the same order",
    );
  };
  if (counted) {
    router.departures.trackProgress(context, () => begun);
    owner.onLeave((rank, progress) => {
      const count = progress.get(context) ?? 0;
      if (leaver && leaver.begun <= count) return;
      leaver = { rank, begun: count };
      // In a collective that rank never began: it, and every later one, can never end (the matcher then
      // rejects every receive of this context); one it began may still end, and the next is refused below.
      const n = begun - 1;
      if (n >= count) router.matcher(context).fail(leftError);
    });
  }
  return {
    rank: owner.rank,
    size: owner.size,
    nextSequence: () => {
      const tag = seq;
      seq = (seq + 1) % SEQUENCE_WRAP;
      begun++;
      return tag;
    },
    send: (dest, tag, data, call, name) => {
      if (leaver && begun - 1 >= leaver.begun) return Promise.reject(leftError(call));
      return owner.sendIn(context, dest, wireTag(tag, call), data, call, name ?? "value");
    },
    recv: async (source, tag, signal, call) => {
      if (leaver && begun - 1 >= leaver.begun) throw leftError(call);
      return (await router.matcher(context).receive(source, wireTag(tag, call), signal, call)).data;
    },
  };
}
