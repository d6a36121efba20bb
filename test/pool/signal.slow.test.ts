// The rest of signal.test.ts's sweep (the fast suite runs each way of ending under one pool): every way of ending
// under every pool.
process.env.WORKPOOL_TEST_SWEEP = "rest";
await import("./signal.test.ts");
