import type { BalancerFactory } from "./balancer.ts";
import { ReceiverInitiated } from "./receiver.ts";
import { SenderInitiated } from "./sender.ts";

/** Initiation strategies by the name the `initiation` option uses. */
export const INITIATION_STRATEGIES = {
  receiver: (host, partner) => new ReceiverInitiated(host, partner),
  sender: (host, partner) => new SenderInitiated(host, partner),
} as const satisfies Record<string, BalancerFactory>;
