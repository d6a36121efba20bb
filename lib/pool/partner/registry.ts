import type { PartnerFactory } from "./partner.ts";
import { random } from "./random.ts";
import { ring } from "./ring.ts";
import { roundRobin } from "./round-robin.ts";

/** Partner policies by the name the `partner` option uses. A new policy is one file and one line here. */
export const PARTNER_POLICIES = {
  "round-robin": roundRobin,
  random,
  ring,
} as const satisfies Record<string, PartnerFactory>;
