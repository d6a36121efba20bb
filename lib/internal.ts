/** Internals the launcher, benchmarks and tests need. Not part of the stable API. */

export { pack, unpack } from "./comm/codec.ts";
export type { TransportKind } from "./comm/env.ts";
export { ENV, rankEnvironment, readJobEnv } from "./comm/env.ts";
export { serveRendezvous } from "./comm/rendezvous.ts";
export { addressFacing, resolveHost, tcpEndpoint } from "./comm/address.ts";
export { formatJobKey, makeJobKey } from "./comm/job-key.ts";
export { notPrivate, privateFolder, userId } from "./comm/private-folder.ts";
export type { ControlAddress } from "./control/channel.ts";
export { parseControlAddress } from "./control/channel.ts";
export type { RankDeathListener } from "./control/deaths.ts";
export { onRankDeath } from "./control/deaths.ts";
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
