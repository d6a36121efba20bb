import type { DetectorFactory } from "./detector.ts";
import { TokenRing } from "./token-ring.ts";
import { Tree } from "./tree.ts";

/** Termination detectors by the name the `termination` option uses. */
export const TERMINATION_DETECTORS = {
  "token-ring": (host) => new TokenRing(host),
  tree: (host) => new Tree(host),
} as const satisfies Record<string, DetectorFactory>;
