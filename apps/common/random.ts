/**
 * A small seeded PRNG (mulberry32) so generated inputs are the same on every rank and every run.
 * Never use Math.random in the apps: a generated graph or video must be reproducible from its seed.
 */
export class Random {
  private state: number;

  /** `seed` is any integer; it is reduced to 32 bits. */
  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Next 32-bit unsigned integer. */
  nextUint32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** Uniform float in [0, 1). */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** Uniform integer in [lo, hi] (both inclusive); the span must be below 2^32. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
}
