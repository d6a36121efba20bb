// uts.test.ts's slow part: three more of its pool runs, and rank 0 killed under a coordinator on rank 2.
process.env.WORKPOOL_TEST_SWEEP = "rest";
await import("./uts.test.ts");
