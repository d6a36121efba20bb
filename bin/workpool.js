#!/usr/bin/env node
// The `workpool` command. It runs the launcher built in dist/ (plain JavaScript: no TypeScript loader, and the
// ranks of a JavaScript app load none either) when that build is there and up to date; otherwise, in a checkout
// whose sources changed since `npm run build`, the TypeScript sources through tsx. WORKPOOL_FROM=dist or
// WORKPOOL_FROM=source forces one (docs/package.md).
import { existsSync, mkdtempSync, rmdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildState } from "./build-state.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

// bin/workpool (the installed command) started this process without NODE_EXTRA_CA_CERTS, which node parses at
// every start and the launcher never uses; everything the launcher starts gets it back as the user set it.
const HELD_CA = "WORKPOOL_HELD_NODE_EXTRA_CA_CERTS";
if (process.env[HELD_CA] !== undefined) {
  process.env.NODE_EXTRA_CA_CERTS = process.env[HELD_CA];
  delete process.env[HELD_CA];
}

const from = process.env.WORKPOOL_FROM;
if (from !== undefined && from !== "" && from !== "dist" && from !== "source") {
  process.stderr.write(`workpool: WORKPOOL_FROM must be dist or source; got ${JSON.stringify(from)}\n`);
  process.exit(2);
}
// The temporary folder holds every job's folder (sockets, traces) and tsx's cache: one that cannot be used is
// one line naming the variable, not a stack trace from whichever part of the launcher first needed it.
const tmpVar = ["TMPDIR", "TMP", "TEMP"].find((name) => process.env[name]);
if (tmpVar !== undefined) {
  const dir = tmpdir();
  try {
    rmdirSync(mkdtempSync(join(dir, "wp-check-")));
  } catch (e) {
    let kind = "missing";
    try {
      kind = statSync(dir).isDirectory() ? "folder" : "other";
    } catch {
      /* missing, or under a file */
    }
    const why =
      kind === "missing"
        ? "no such folder"
        : kind === "other"
          ? "not a folder"
          : `no folder can be made in it (${e.code ?? e.message})`;
    process.stderr.write(
      `workpool: ${tmpVar}=${JSON.stringify(process.env[tmpVar])} cannot hold the job's temporary files: ${why}; ` +
        `set ${tmpVar} to a folder you can write in, or unset it\n`,
    );
    process.exit(2);
  }
}

// The first ranks' node starts now, while the launcher loads (launcher/warm.ts): from dist/, so those processes
// are killed if the launcher runs from the sources after all.
let warm;
if (
  process.argv[2] === "launch" &&
  from !== "source" &&
  existsSync(new URL("../dist/launcher/warm.js", import.meta.url))
) {
  try {
    warm = await import("../dist/launcher/warm.js");
    warm.startWarm(process.argv.slice(3));
  } catch {
    warm = undefined; // a build being rewritten: the ranks start cold
  }
}
const fromDist = from === "dist" || (from !== "source" && buildState(ROOT) === "fresh");
if (!fromDist) await warm?.endWarm?.();
let main;
if (fromDist || !existsSync(new URL("../launcher/cli.ts", import.meta.url))) {
  ({ main } = await import("../dist/launcher/cli.js"));
} else {
  const { register } = await import("tsx/esm/api");
  register();
  ({ main } = await import("../launcher/cli.ts"));
}
process.exitCode = await main(process.argv.slice(2));
// Warm processes no rank took (a refused command line): ended and collected here, not left to init.
await warm?.endWarm?.();
