/**
 * Loaded into every rank before the app (`node --import`). It opens the rank's control channel to the launcher
 * (control.ts: a connection to the address in WORKPOOL_CONTROL, made in the background, authenticated by the
 * job's WORKPOOL_TOKEN, so a rank on another host can make it too; the app starts at once over a local Unix
 * socket, after one round trip over TCP). Three duties:
 * - the lifeline: once the connection is up, its end (the launcher exited or was killed, even by SIGKILL)
 *   makes this rank exit at once, with status 129;
 * - the last word: an uncaught error is written to the channel synchronously before the process dies, so the
 *   launcher's summary can say which rank failed and why;
 * - the report channel: pools send their statistics and progress to the launcher over the same connection
 *   (see report.ts), one JSON object a line.
 * Without WORKPOOL_CONTROL (no launcher) it does nothing.
 */
import { openControlChannel } from "./control.ts";
import { CONTROL_KEY } from "./report.ts";

const channel = openControlChannel();

if (channel) {
  (globalThis as Record<symbol, unknown>)[CONTROL_KEY] = channel;
  process.on("uncaughtExceptionMonitor", (err) => {
    const message = err instanceof Error ? `${err.name}: ${err.message}` : `uncaught ${String(err)}`;
    channel.sendSync({ t: "error", message });
  });
  // The app starts once the last words have a way out: at once over a Unix socket (a local rank never waits
  // here), after one round trip over TCP.
  await channel.ready;
}
