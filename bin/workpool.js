#!/usr/bin/env node
// The `workpool` command: loads the TypeScript launcher through tsx (no build step needed).
import { register } from "tsx/esm/api";

register();
const { main } = await import("../launcher/cli.ts");
process.exitCode = await main(process.argv.slice(2));
