export type { CollectiveOptions } from "./comm/collectives.ts";
export type { Message } from "./comm/matcher.ts";
export { ANY } from "./comm/matcher.ts";
export type { ReduceFn, ReduceOp, ReduceOpName } from "./comm/ops.ts";
export type { RecvOptions } from "./comm/matcher.ts";
export type { ErrorCode } from "./errors.ts";
export {
  AbortError,
  BootstrapError,
  ClosedError,
  ConfigError,
  EncodeError,
  InvalidArgumentError,
  PeerAbortedError,
  RankFailedError,
  StoppedError,
  TaskError,
  WorkpoolError,
} from "./errors.ts";
export type {
  Initiation,
  PartnerPolicy,
  PoolConfig,
  PoolMode,
  PoolOptions,
  TerminationDetector,
  Topology,
} from "./pool/options.ts";
export type { DoacrossBody, DoacrossOptions, DoacrossResult } from "./loop/doacross.ts";
export type { MapContext, MapHandler, MapOptions } from "./loop/map.ts";
export type { LoopBody, LoopContext, LoopOptions, LoopResult, LoopStats, StoppableLoopResult } from "./loop/options.ts";
export type { BoundSense } from "./pool/bound.ts";
export { Bound } from "./pool/bound.ts";
export { Pool } from "./pool/pool.ts";
export type { TaskOrder } from "./pool/queue.ts";
export type {
  GatherKey,
  GatherOptions,
  PoolStats,
  PutOptions,
  RunOptions,
  RunResult,
  StoppableRunResult,
  TaskContext,
  TaskHandler,
} from "./pool/types.ts";
export { connect, World } from "./world.ts";
