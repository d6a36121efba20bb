// The rest of concurrency.test.ts's sweep of pools (the fast suite runs one case of each kind): every balancing
// initiation, both detectors, and the centralized variants.
process.env.WORKPOOL_TEST_SWEEP = "rest";
await import("./concurrency.test.ts");
