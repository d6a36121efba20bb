/**
 * Internals the launcher, benchmarks and tests need: those of internal-start.ts (what starting ranks takes) and
 * the rendezvous, the codec and the pool options. Not part of the stable API.
 */

export * from "./internal-start.ts";
export { pack, unpack } from "./comm/codec.ts";
export { serveRendezvous } from "./comm/rendezvous.ts";
export { INITIATION_STRATEGIES } from "./pool/balance/registry.ts";
export {
  comboFromName,
  comboName,
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
export { parsePoolSpec, resolvePoolConfig } from "./pool/options.ts";
export { PARTNER_POLICIES } from "./pool/partner/registry.ts";
export { testSeams } from "./pool/runtime.ts";
export { TERMINATION_DETECTORS } from "./pool/termination/registry.ts";
