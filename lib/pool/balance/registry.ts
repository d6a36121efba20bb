import type { Initiation } from "../config.ts";
import type { InitiationStrategy } from "../strategy.ts";
import { diffusion } from "./diffusion.ts";
import { lifeline } from "./lifeline.ts";
import { receiver } from "./receiver.ts";
import { ripple } from "./ripple.ts";
import { sender } from "./sender.ts";

/** Initiation strategies by the name the `initiation` option uses (config.ts lists the names). */
export const INITIATION_STRATEGIES: { readonly [K in Initiation]: InitiationStrategy } = {
  receiver,
  sender,
  diffusion,
  ripple,
  lifeline,
};
