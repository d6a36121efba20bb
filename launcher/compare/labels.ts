/**
 * Short readable names for pool specs, for the report's charts and tables (the full spec goes in a tooltip):
 * `distributed,initiation=receiver,partner=random,termination=token-ring` -> `dist recv/random/token`,
 * `centralized,coordinatorWorks=true` -> `central coordinatorWorks`, `centralized,keep=0` -> `central keep=0`.
 * A distributed name always shows initiation/partner/termination, defaults filled in (no partner for the
 * initiations that take none: `dist lifeline/token`); other keys as given.
 */
import { PARTNERED, resolvePoolConfig } from "../../lib/internal.ts";

const SHORT: Readonly<Record<string, string>> = {
  centralized: "central",
  distributed: "dist",
  receiver: "recv",
  sender: "send",
  "token-ring": "token",
};
const short = (name: string) => SHORT[name] ?? name;
const TRIPLE = new Set(["mode", "initiation", "partner", "termination"]);

export function shortLabel(spec: string): string {
  let config;
  try {
    config = resolvePoolConfig(undefined, spec, Number.MAX_SAFE_INTEGER);
  } catch {
    return spec;
  }
  const parts = [short(config.mode)];
  if (config.mode === "distributed") {
    const partner = PARTNERED[config.initiation] ? [config.partner] : [];
    parts.push([config.initiation, ...partner, config.termination].map(short).join("/"));
  }
  for (const part of spec.split(",")) {
    const eq = part.indexOf("=");
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (eq <= 0 || TRIPLE.has(key)) continue;
    parts.push(value === "true" ? key : `${key}=${value}`);
  }
  return parts.join(" ");
}
