import { readFileSync } from "node:fs";

/**
 * The time this process's main thread has run on a core or waited for one, in ms: what its work asked of the
 * CPU, whether or not a core was free. On Linux from `/proc/thread-self/schedstat` (run time and run-queue wait,
 * in ns); elsewhere the process's CPU time (which a busy machine makes read low). A thread that waits on I/O or
 * a timer is in neither, so over an interval, this time against the clock tells work that computes (near 1) from
 * work that waits (near 0), on a loaded machine too, where CPU time alone cannot: a rank that computes gets a
 * fraction of a core there. A read costs about 40 µs on Linux: read it seldom.
 */
export function coreTimeMs(): number {
  if (schedstat) {
    try {
      const [run, wait] = readFileSync("/proc/thread-self/schedstat", "latin1").split(" ");
      return (Number(run) + Number(wait)) / 1e6;
    } catch {
      schedstat = false;
    }
  }
  const cpu = process.cpuUsage();
  return (cpu.user + cpu.system) / 1000;
}

let schedstat = process.platform === "linux";
