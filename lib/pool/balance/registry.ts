import type { Initiation } from "../config.ts";
import type { InitiationStrategy } from "../strategy.ts";
import { receiver } from "./receiver.ts";
import { sender } from "./sender.ts";

/** Initiation strategies by the name the `initiation` option uses (config.ts lists the names). */
export const INITIATION_STRATEGIES: { readonly [K in Initiation]: InitiationStrategy } = { receiver, sender };
