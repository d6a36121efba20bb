// The plain loop of `npm run bench -- tasks` (bench/tasks.ts): PLAIN_IN_FLIGHT readers over the files of a
// folder, each reading a file and hashing it, one at a time. Run as a program (`plain-hash.ts DIR WAIT_MS`), it
// prints one JSON line, `{"ms","xor","cpuMs"}`: wall and CPU time (every thread) from its first read, the xor
// of the hashes' first words. The bench also imports it to learn the xor every run must reach.
import { createHash } from "node:crypto";
import { readdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

/** Reads the plain loop keeps in flight. */
export const PLAIN_IN_FLIGHT = 8;

/** The plain loop: PLAIN_IN_FLIGHT readers over the files, each reading and hashing one at a time. */
export async function plainHash(dir: string, waitMs: number): Promise<{ ms: number; xor: number; cpuMs: number }> {
  const files = readdirSync(dir).map((f) => join(dir, f));
  let next = 0;
  let xor = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: PLAIN_IN_FLIGHT }, async () => {
      while (next < files.length) {
        const file = files[next++] as string;
        // Read before xor is: `xor ^ (await ...)` would take xor's value from before the await.
        if (waitMs > 0) await sleep(waitMs);
        const bytes = await readFile(file);
        xor = (xor ^ createHash("sha256").update(bytes).digest().readUInt32LE(0)) >>> 0;
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  return { ms: performance.now() - t0, xor, cpuMs: (cpu.user + cpu.system) / 1000 };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [dir = ".", waitMs = "0"] = process.argv.slice(2);
  console.log(JSON.stringify(await plainHash(dir, Number(waitMs))));
}
