import type { InitiationStrategy } from "../strategy.ts";
import { diffusion } from "./diffusion.ts";
import { lifeline } from "./lifeline.ts";
import { receiver } from "./receiver.ts";
import { ripple } from "./ripple.ts";
import { sender } from "./sender.ts";

/** Initiation strategies by the name the `initiation` option uses (config.ts takes the names from here). */
export const INITIATION_STRATEGIES = {
  receiver,
  sender,
  diffusion,
  ripple,
  lifeline,
} as const satisfies Readonly<Record<string, InitiationStrategy>>;
