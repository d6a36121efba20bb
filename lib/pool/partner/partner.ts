/**
 * Partner selection of a distributed pool: whom a rank asks for work (receiver-initiated) or pushes work to
 * (sender-initiated). A policy is one file exporting a `PartnerFactory`, named in `registry.ts`.
 */
export interface Partner {
  /** The next rank to contact; never this rank. */
  next(): number;
  /**
   * How many distinct ranks `next` cycles through: after this many refusals in a row, every partner has
   * said no and the asker backs off.
   */
  readonly span: number;
}

/** Makes the policy of rank `rank` in a job of `size` ranks (size >= 2). `seed` is the pool's `seed` option. */
export type PartnerFactory = (rank: number, size: number, seed: number) => Partner;
