import type { Partner, PartnerStrategy } from "../strategy.ts";

/** A small, fast seeded generator (mulberry32) of uniform numbers in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Uniform over the other ranks, from a generator seeded with `seed + rank` (runs are repeatable). */
export const random: PartnerStrategy = {
  summary: "uniform over the other ranks, seeded (seed + rank): runs repeat",
  create(rank, size, seed): Partner {
    const rnd = seededRandom(seed + rank);
    return {
      span: size - 1,
      next() {
        const r = Math.floor(rnd() * (size - 1));
        return r >= rank ? r + 1 : r;
      },
    };
  },
};
