// The distributed pool's combination sweep (distributed.test.ts) on 4 and 16 ranks: every balancing combination of
// each detector on every workload, under chaos delays. In the slow suite: each launch takes about a minute here.
process.env.WORKPOOL_TEST_SWEEP_RANKS = "4,16";
await import("./distributed.test.ts");
