// The rest of deadlock.test.ts's cases (the fast suite runs one of each kind), and the --timeout case.
process.env.WORKPOOL_TEST_SWEEP = "rest";
await import("./deadlock.test.ts");
