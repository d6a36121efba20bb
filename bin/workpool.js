#!/usr/bin/env node
// The `workpool` command. It runs the launcher built in dist/ (plain JavaScript: no TypeScript loader, and the
// ranks of a JavaScript app load none either) when that build is there and up to date; otherwise, in a checkout
// whose sources changed since `npm run build`, the TypeScript sources through tsx. WORKPOOL_FROM=dist or
// WORKPOOL_FROM=source forces one (docs/package.md).
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { buildState } from "./build-state.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

const from = process.env.WORKPOOL_FROM;
if (from !== undefined && from !== "" && from !== "dist" && from !== "source") {
  process.stderr.write(`workpool: WORKPOOL_FROM must be dist or source; got ${JSON.stringify(from)}\n`);
  process.exit(2);
}
const fromDist = from === "dist" || (from !== "source" && buildState(ROOT) === "fresh");
let main;
if (fromDist || !existsSync(new URL("../launcher/cli.ts", import.meta.url))) {
  ({ main } = await import("../dist/launcher/cli.js"));
} else {
  const { register } = await import("tsx/esm/api");
  register();
  ({ main } = await import("../launcher/cli.ts"));
}
process.exitCode = await main(process.argv.slice(2));
