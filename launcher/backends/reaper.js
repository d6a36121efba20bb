// The job's last line of defence against orphans, started detached by the launcher. It reads rank process
// group ids on stdin, one per line. If stdin ends without the line "done" (the launcher died, even by
// SIGKILL), it sends SIGTERM to every group, SIGKILL a moment later, removes the job folder, and exits.
import { rmSync } from "node:fs";

const dir = process.argv[2];
const groups = new Set();
let done = false;
let buffer = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  const lines = buffer.split("\n");
  buffer = lines.pop() ?? "";
  for (const line of lines) {
    if (line === "done") done = true;
    else if (/^\d+$/.test(line)) groups.add(Number(line));
  }
});
const signalAll = (signal) => {
  for (const g of groups) {
    try {
      process.kill(-g, signal);
    } catch {
      /* already gone */
    }
  }
};
const cleanup = () => {
  if (dir) rmSync(dir, { recursive: true, force: true });
};
process.stdin.on("end", () => {
  if (done) {
    cleanup();
    return;
  }
  signalAll("SIGTERM");
  setTimeout(() => {
    signalAll("SIGKILL");
    cleanup();
  }, 2000);
});
