/**
 * A warm rank (launcher/warm.ts): a node process the launcher started before it knew the job, waiting on fd 3
 * for the rank it becomes. It then takes on what a cold rank is given at its start, in the order node would
 * apply it: the environment, `process.argv` and `process.execArgv`, each `--import` in turn (the boot, then the
 * preload with its control channel), and the app, run as node runs a main module (`require.main` included).
 * An empty pipe (the launcher went away) ends it at once, status 0.
 */
import { readSync } from "node:fs";
import Module from "node:module";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

interface WarmRank {
  env: Record<string, string>;
  execArgv: string[];
  imports: string[];
  app: string;
  args: string[];
}

const text = readPipe(3);
if (text === "") process.exit(0);
const rank = JSON.parse(text) as WarmRank;

for (const name of Object.keys(process.env)) if (!(name in rank.env)) delete process.env[name];
Object.assign(process.env, rank.env);
const app = resolve(rank.app);
process.argv.splice(1, process.argv.length - 1, app, ...rank.args);
process.execArgv.splice(0, process.execArgv.length, ...rank.execArgv);
try {
  process.title = [process.argv0, app, ...rank.args].join(" ");
} catch {
  /* the title is cosmetic */
}
for (const url of rank.imports) await import(url);
if (/\.[cm]?tsx?$/.test(app)) {
  // Through the ES module loader, whose hooks (tsx's, imported above) compile it: node's CommonJS loader, which
  // runMain would use (this process was not started with --import), knows nothing of TypeScript. Awaited, so the
  // app is this process's entry as far as node can tell: its throw is an uncaught exception, and a top-level
  // await of its that never settles ends the process with status 13, as in a cold rank.
  await import(pathToFileURL(app).href);
} else {
  // As node runs a main module (require.main, an ES module's loader): once this module is done, so that a throw
  // while the app loads is an uncaught exception, as in a cold rank, not a rejection of this module.
  process.nextTick(() => (Module as unknown as { runMain(main: string): void }).runMain(app));
}

/**
 * Everything written to `fd` until its end, read synchronously: the process has nothing else to do meanwhile,
 * and the rank is usually there as soon as node has started (an event loop's turn would only delay it).
 */
function readPipe(fd: number): string {
  const chunk = Buffer.alloc(64 * 1024);
  const parts: Buffer[] = [];
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    let n: number;
    try {
      n = readSync(fd, chunk);
    } catch (e) {
      // A pipe left non-blocking: wait for more.
      if ((e as NodeJS.ErrnoException).code === "EAGAIN") {
        Atomics.wait(pause, 0, 0, 1);
        continue;
      }
      return "";
    }
    if (n === 0) return Buffer.concat(parts).toString("utf8");
    parts.push(Buffer.from(chunk.subarray(0, n)));
  }
}
