/**
 * The internals a launcher needs to start a job's ranks: the job's environment, addresses, key, private folder,
 * control channel and the records on it (control/records.ts). Nothing here loads zeromq, msgpackr or the pools,
 * so `workpool launch` starts its ranks without waiting for them (the rendezvous and the pool options come from
 * internal.ts, loaded when needed, as they are not at -n 1). internal.ts re-exports all of it. Not part of the
 * stable API.
 */

export type { TransportKind } from "./comm/env.ts";
export { ENV, rankEnvironment, readJobEnv } from "./comm/env.ts";
export { addressFacing, resolveHost, tcpEndpoint } from "./comm/address.ts";
export { formatJobKey, makeJobKey } from "./comm/job-key.ts";
export { notPrivate, privateFolder, userId } from "./comm/private-folder.ts";
export type { ControlAddress } from "./control/channel.ts";
export { parseControlAddress } from "./control/channel.ts";
export type { RankDeathListener } from "./control/deaths.ts";
export { onRankDeath } from "./control/deaths.ts";
export type {
  DeadRecord,
  LauncherRecord,
  LeftRecord,
  LivePool,
  LiveSample,
  Progress,
  RankRecord,
  RedealtRecord,
  ShrunkRecord,
  StatsReport,
  UncheckedRecord,
  WaitsRecord,
} from "./control/records.ts";
export { readRankRecord } from "./control/records.ts";
