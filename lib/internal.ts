/** Internals the launcher, benchmarks and tests need. Not part of the stable API. */

export { pack, unpack } from "./comm/codec.ts";
export type { JobEnv, TransportKind } from "./comm/env.ts";
export { ENV, readJobEnv } from "./comm/env.ts";
export type { RankInfo, RendezvousService } from "./comm/rendezvous.ts";
export { serveRendezvous } from "./comm/rendezvous.ts";
export { CONTEXT } from "./comm/world.ts";
export { INITIATIONS, PARTNERS, resolvePoolConfig, TERMINATIONS } from "./pool/options.ts";
