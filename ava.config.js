// The fast suite: `npm test` (the README's command). The slow suites (ava.slow.config.js: real multi-host jobs
// over namespaces, ssh, mpirun and Slurm, the soak, the packed package, and files named `*.slow.test.ts`: sweeps
// over seeds and sizes, deaths, memory, and the rest of the fast files' sweeps, test/helpers/sweep.ts) run with
// `npm run test:slow`;
// `npm run test:all` runs both, and so does CI (.ci/run).
export const SLOW = ["test/multihost/**", "test/robustness/**", "test/package/**", "test/**/*.slow.test.ts"];

export default {
  files: ["test/**/*.test.ts", ...SLOW.map((glob) => `!${glob}`)],
  extensions: { ts: "module" },
  nodeArguments: ["--import=tsx", "--conditions=workpool-source"],
  workerThreads: false,
  concurrency: 2,
  timeout: "120s",
};
