import type { Partner, PartnerStrategy } from "../strategy.ts";
import { neighboursOf } from "../topology.ts";

/**
 * The rank's neighbours in the pool's `topology` (hypercube, 2-D torus or ring), in turn, starting at one
 * chosen from `seed + rank`: work moves only along the graph's edges, as on a machine whose ranks talk only
 * to their neighbours (seed 000's nCUBE2).
 */
export const neighbours: PartnerStrategy = {
  summary: "the rank's neighbours in `topology`, in turn",
  reads: ["topology"],
  create(rank, size, seed, topology): Partner {
    const near = neighboursOf(topology, rank, size);
    let cursor = (seed + rank) % near.length;
    return {
      span: near.length,
      next() {
        cursor = (cursor + 1) % near.length;
        return near[cursor] as number;
      },
    };
  },
};
