import type { DetectionStrategy } from "../strategy.ts";
import { tokenRing } from "./token-ring.ts";
import { tree } from "./tree.ts";

/** Termination detectors by the name the `termination` option uses (config.ts takes the names from here). */
export const TERMINATION_DETECTORS = {
  "token-ring": tokenRing,
  tree,
} as const satisfies Readonly<Record<string, DetectionStrategy>>;
