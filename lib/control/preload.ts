/**
 * Loaded into every rank before the app (`node --import`). It opens the rank's control channel to the launcher
 * (channel.ts: a connection to the address in WORKPOOL_CONTROL, made in the background, authenticated by the
 * job's WORKPOOL_TOKEN, so a rank on another host can make it too; the app starts at once over a local Unix
 * socket, after one round trip over TCP). Four duties:
 * - the first heartbeat: it goes with the hello, before the app is evaluated (synchronously over a Unix socket),
 *   so the launcher's clock for this rank runs before the app can block it, and later beats follow on a timer;
 * - the lifeline: once the connection is up, its end (the launcher exited or was killed, even by SIGKILL)
 *   makes this rank exit at once, with status 129;
 * - the last word: an uncaught error is written to the channel synchronously before the process dies, so the
 *   launcher's summary can say which rank failed and why; its stack goes to the launcher instead of this
 *   rank's stderr, and the launcher prints one stack per different error message (ranks that all fail on the
 *   same bad input, at import, or on one task's TaskError, do not print it N times). If the app handles uncaught errors itself,
 *   only the last word is sent;
 * - the report channel: pools send their statistics and progress to the launcher over the same connection
 *   (see report.ts), one JSON object a line.
 * Without WORKPOOL_CONTROL (no launcher) it does nothing.
 */
import "./boot.ts";
import { createRequire } from "node:module";
import { openControlChannel } from "./channel.ts";
import { liveFromStart, startLive } from "./live.ts";
import { moduleFormatHint } from "./module-format.ts";
import { CONTROL_KEY } from "./report.ts";

const channel = openControlChannel();

/** util.inspect, as node prints an uncaught error; node:util is loaded only when one comes (it costs every rank a start). */
const inspect = (value: unknown): string =>
  (createRequire(import.meta.url)("node:util") as typeof import("node:util")).inspect(value);

if (channel) {
  (globalThis as Record<symbol, unknown>)[CONTROL_KEY] = channel;
  const lastWords = (err: unknown, print: boolean) => {
    // An app written as an ES module that node loads as CommonJS: said as the fix (module-format.ts), without
    // node's stack, which is all inside node's loader (13 lines a new user read before the fix).
    const hint = moduleFormatHint(err, process.argv[1]);
    const message = hint ?? (err instanceof Error ? `${err.name}: ${err.message}` : `uncaught ${String(err)}`);
    // As Node would print it: the stack, the error's own fields (a TaskError's rank and task) and its cause's
    // stack, which is where the app's handler threw.
    const stack = err instanceof Error ? inspect(err) : `Uncaught ${inspect(err)}`;
    return channel.sendSync(print && hint === undefined ? { t: "error", message, stack } : { t: "error", message });
  };
  process.on("uncaughtException", (err) => {
    // The app's own handler decides what happens: only the last word goes out.
    if (process.listenerCount("uncaughtException") > 1) {
      lastWords(err, false);
      return;
    }
    // Node would print the stack and exit 1; the launcher prints it (once per different stack) instead.
    if (!lastWords(err, true)) process.stderr.write(`${inspect(err)}\n`);
    process.exit(1);
  });
  // A job launched with --dashboard is watched from the start (live.ts).
  if (liveFromStart()) startLive((record) => channel.send(record));
  // The app starts once the last words have a way out: at once over a Unix socket (a local rank never waits
  // here), after one round trip over TCP.
  await channel.ready;
}
