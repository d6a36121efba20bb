import type { Partner, PartnerStrategy } from "../strategy.ts";
import { seededRandom } from "./random.ts";

/**
 * Each rank cycles through all the others in rank order, starting at a place drawn from `seed + rank`. Ranks
 * that all start after themselves move in lockstep: the ranks a block of busy ranks asks (or pushes to) are
 * that block shifted by one, busy too, and at 1,024 ranks finding an idle rank took most of a run.
 */
export const roundRobin: PartnerStrategy = {
  summary: "each rank cycles through all the others in rank order, from a seeded start",
  create(rank, size, seed): Partner {
    let cursor = (rank + Math.floor(seededRandom(seed + rank)() * (size - 1))) % size;
    return {
      span: size - 1,
      next() {
        cursor = (cursor + 1) % size;
        if (cursor === rank) cursor = (cursor + 1) % size;
        return cursor;
      },
    };
  },
};
