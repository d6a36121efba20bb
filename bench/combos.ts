/**
 * The distributed combinations the benchmarks run: every one in DISTRIBUTED_COMBINATIONS (lib/pool/config.ts)
 * whose strategies are in the registries. config.ts may name a strategy before its file is registered; such
 * combinations are left out and listed by `missingCombos`, so a suite says what it did not run.
 */
import {
  comboName,
  DISTRIBUTED_COMBINATIONS,
  type DistributedCombination,
  INITIATION_STRATEGIES,
  PARTNER_POLICIES,
  TERMINATION_DETECTORS,
} from "../lib/internal.ts";

/** True when every strategy `c` names is registered. */
export function registered(c: DistributedCombination): boolean {
  return (
    Object.hasOwn(INITIATION_STRATEGIES, c.initiation) &&
    (c.partner === undefined || Object.hasOwn(PARTNER_POLICIES, c.partner)) &&
    Object.hasOwn(TERMINATION_DETECTORS, c.termination)
  );
}

/** The combinations that can run today, in registry order. */
export function availableCombos(): DistributedCombination[] {
  return DISTRIBUTED_COMBINATIONS.filter(registered);
}

/** The short names of the combinations config.ts lists but the registries do not hold yet. */
export function missingCombos(): string[] {
  return DISTRIBUTED_COMBINATIONS.filter((c) => !registered(c)).map(comboName);
}

/**
 * "The twelve": the combinations of the first distributed pool (receiver or sender initiation, round-robin,
 * random or ring partner, token-ring or tree termination), the reference the newer strategies are held to.
 * Named here as a historical set, not as the list of strategies (that is DISTRIBUTED_COMBINATIONS).
 */
export function isOneOfTheTwelve(c: DistributedCombination): boolean {
  return (
    (c.initiation === "receiver" || c.initiation === "sender") &&
    (c.partner === "round-robin" || c.partner === "random" || c.partner === "ring") &&
    (c.termination === "token-ring" || c.termination === "tree")
  );
}
