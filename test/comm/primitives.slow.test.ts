// primitives.test.ts on 16 ranks (the fast suite runs 1 to 4).
process.env.WORKPOOL_TEST_SWEEP = "rest";
await import("./primitives.test.ts");
