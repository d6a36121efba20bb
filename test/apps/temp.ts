import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExecutionContext } from "ava";

/** A fresh temporary directory, removed when the test ends. */
export function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), "workpool-apps-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Writes `contents` to `name` in a fresh temporary directory; returns the path. */
export function tempFile(t: ExecutionContext, name: string, contents: string | Uint8Array): string {
  const path = join(tempDir(t), name);
  writeFileSync(path, contents);
  return path;
}
