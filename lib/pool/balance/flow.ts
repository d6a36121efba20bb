/**
 * A chain's flow, shared by the receiver- and sender-initiated strategies with one partner a rank (`ring`): work
 * that one rank holds for many passes along the chain in small parts, and each rank keeps a level, about its
 * share, and passes on the rest (receiver.ts `flow`, sender.ts `flowShare`; docs/distributed.md, "Chains of idle
 * ranks"). With halves, or shares sized by chain counts, one source at 1,024 simulated ranks went round the ring
 * as a clump (receiver) or did not end within 20 times the bound (sender).
 */
import type { Partner } from "../strategy.ts";

/**
 * Most tasks in one message of a flow. A message costs per task carried at every rank it passes, so the flow's
 * front moves one rank per message of this size: 256 tasks take about half a millisecond a rank in the timed
 * simulation (50 us, 2 us a task), 4,096 took 8 ms.
 */
export const FLOW_PART = 256;

/**
 * Whether a rank's chains flow: it has one partner. Two ranks are each other's only partner whatever the policy,
 * and make no chain.
 */
export function flows(partner: Partner, size: number): boolean {
  return partner.span === 1 && size > 2;
}

/**
 * The level a flow starts at on a rank that holds `movable` tasks: its share of them among the job's `size`
 * ranks. Chain counts come up a chain late and short (each rank tells its count again only once it has doubled,
 * so each hop may halve it: 1,000 idle ranks were counted as 120 at the source), and a level from them came out
 * 8 times too high, so the first ranks kept the work the others waited for. This one errs low: the surplus goes
 * on down the chain. Along the chain a rank keeps the higher of this and the level that reached it.
 */
export function startLevel(movable: number, size: number): number {
  return Math.floor(movable / size);
}
