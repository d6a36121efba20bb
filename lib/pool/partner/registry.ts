import type { PartnerStrategy } from "../strategy.ts";
import { neighbours } from "./neighbours.ts";
import { random } from "./random.ts";
import { ring } from "./ring.ts";
import { roundRobin } from "./round-robin.ts";

/** Partner policies by the name the `partner` option uses (config.ts takes the names from here). */
export const PARTNER_POLICIES = {
  "round-robin": roundRobin,
  random,
  ring,
  neighbours,
} as const satisfies Readonly<Record<string, PartnerStrategy>>;
