import type { TerminationDetector } from "../config.ts";
import type { DetectionStrategy } from "../strategy.ts";
import { tokenRing } from "./token-ring.ts";
import { tree } from "./tree.ts";

/** Termination detectors by the name the `termination` option uses (config.ts lists the names). */
export const TERMINATION_DETECTORS: { readonly [K in TerminationDetector]: DetectionStrategy } = {
  "token-ring": tokenRing,
  tree,
};
