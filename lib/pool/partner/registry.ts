import type { PartnerPolicy } from "../config.ts";
import type { PartnerStrategy } from "../strategy.ts";
import { neighbours } from "./neighbours.ts";
import { random } from "./random.ts";
import { ring } from "./ring.ts";
import { roundRobin } from "./round-robin.ts";

/** Partner policies by the name the `partner` option uses (config.ts lists the names). */
export const PARTNER_POLICIES: { readonly [K in PartnerPolicy]: PartnerStrategy } = {
  "round-robin": roundRobin,
  random,
  ring,
  neighbours,
};
