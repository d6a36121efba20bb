import type { Partner, PartnerFactory } from "./partner.ts";

/** Always the next rank on the ring (rank + 1 mod size): asks go to, and pushes flow to, the successor. */
export const ring: PartnerFactory = (rank, size): Partner => {
  const successor = (rank + 1) % size;
  return { span: 1, next: () => successor };
};
