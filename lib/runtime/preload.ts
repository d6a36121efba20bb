/**
 * Loaded into every rank before the app (`node --import`). Three duties:
 * - the lifeline: the launcher holds the other end of a socket pair on fd WORKPOOL_LIFELINE_FD; when it closes
 *   (the launcher exited or was killed, even by SIGKILL) this rank exits at once;
 * - the last word: an uncaught error is written to the lifeline before the process dies, so the launcher's
 *   summary can say which rank failed and why;
 * - the report channel: pools send their statistics and progress to the launcher over the same socket
 *   (see report.ts), one JSON object a line.
 */
import { writeSync } from "node:fs";
import { Socket } from "node:net";
import { LIFELINE_KEY } from "./report.ts";

const raw = process.env.WORKPOOL_LIFELINE_FD;
const fd = raw === undefined ? Number.NaN : Number(raw);

if (Number.isInteger(fd) && fd > 2) {
  let lifeline: Socket | undefined;
  try {
    lifeline = new Socket({ fd, readable: true, writable: true });
  } catch {
    lifeline = undefined;
  }
  if (lifeline) {
    const gone = () => {
      process.exit(129);
    };
    lifeline.on("end", gone);
    lifeline.on("close", gone);
    lifeline.on("error", gone);
    lifeline.resume();
    lifeline.unref();
    (globalThis as Record<symbol, unknown>)[LIFELINE_KEY] = lifeline;
    process.on("uncaughtExceptionMonitor", (err) => {
      const message = err instanceof Error ? `${err.name}: ${err.message}` : `uncaught ${String(err)}`;
      try {
        writeSync(fd, `${JSON.stringify({ t: "error", message })}\n`);
      } catch {
        /* the launcher is gone; nothing to tell */
      }
    });
  }
}
