/**
 * First of the preload's imports, so it runs before any module reads the environment: a rank started on another
 * host by the launcher's agent gets its job variables in WORKPOOL_BOOT (launcher/backends/hosts.ts), which this
 * moves into the environment. A rank started on this host has none, and nothing changes.
 */
import { applyBoot } from "../comm/env.ts";

applyBoot();
