import type { Partner, PartnerStrategy } from "../strategy.ts";

/** Always the next rank on the ring (rank + 1 mod size): asks go to, and pushes flow to, the successor. */
export const ring: PartnerStrategy = {
  summary: "always the successor on the ring (rank + 1 mod size)",
  create(rank, size): Partner {
    const successor = (rank + 1) % size;
    return { span: 1, previous: (rank - 1 + size) % size, next: () => successor };
  },
};
