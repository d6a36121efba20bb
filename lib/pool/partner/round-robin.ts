import type { Partner, PartnerStrategy } from "../strategy.ts";

/** Each rank cycles through all the others, starting with the one after itself. */
export const roundRobin: PartnerStrategy = {
  summary: "each rank cycles through all the others, starting after itself",
  create(rank, size): Partner {
    let cursor = rank;
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
