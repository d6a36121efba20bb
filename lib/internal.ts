/**
 * Internals the launcher, benchmarks and tests need: those of internal-start.ts (what starting ranks takes) and
 * the rendezvous, the codec, the pool options and strategy registries, and the parts of a distributed pool's
 * engine that the in-process simulations drive (sim/, the kernel under test/helpers' and bench/sim's). Not part of the stable API.
 */

export * from "./internal-start.ts";
export { pack, unpack } from "./comm/codec.ts";
export { clientOptions, type JobKey, parseJobKey, serverOptions } from "./comm/job-key.ts";
export { serveRendezvous } from "./comm/rendezvous.ts";
export { INITIATION_STRATEGIES } from "./pool/balance/registry.ts";
export {
  comboFromName,
  comboName,
  DEFAULT_CONCURRENCY,
  DISTRIBUTED_COMBINATIONS,
  type DistributedCombination,
  distributedSpec,
  INITIATIONS,
  PARTNERED,
  PARTNERS,
  TERMINATIONS,
  readsTopology,
  TOPOLOGIES,
  TOPOLOGY_READERS,
} from "./pool/config.ts";
export { DistributedEngine } from "./pool/distributed/engine.ts";
export { type PoolOptions, parsePoolSpec, resolvePoolConfig } from "./pool/options.ts";
export { seededRandom } from "./pool/partner/random.ts";
export { PARTNER_POLICIES } from "./pool/partner/registry.ts";
export { Results } from "./pool/results.ts";
export { type PoolLink, PoolRuntime, testSeams } from "./pool/runtime.ts";
export type { Timers } from "./pool/timers.ts";
export { emptyStats } from "./pool/types.ts";
export { TERMINATION_DETECTORS } from "./pool/termination/registry.ts";
