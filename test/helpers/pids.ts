import type { ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync, watch } from "node:fs";
import { dirname } from "node:path";
import { setTimeout as delay } from "node:timers/promises";

/** True while a process with this pid exists (signal 0 only checks). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ESRCH") return false;
    throw e;
  }
}

/** Processes whose parent is `ppid` (from /proc). */
export function childrenOf(ppid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[1]) === ppid) out.push(Number(name));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

/** Pids in `pids` that still exist. */
export function alive(pids: readonly number[]): number[] {
  return pids.filter(isAlive);
}

/**
 * Waits for a condition that another process brings about and that no event tells: a process that is not
 * this one's child exiting (Node has no pidfd), processes inside a network namespace ending. Checks every
 * `everyMs` and gives up at `deadlineMs`. Resolves to whether the condition came true; the deadline only
 * bounds a failing test. Where an event exists, wait on it instead: `exitsWithin` (a child's exit),
 * `waitUntilRemoved` (a folder's change events), a line the process prints (`job.lines`).
 */
export async function until(condition: () => boolean, everyMs = 20, deadlineMs = 15_000): Promise<boolean> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    if (condition()) return true;
    if (Date.now() > end) return false;
    await delay(everyMs);
  }
}

/** Waits until none of `pids` exists; resolves to the ones still alive at the deadline (empty on success). */
export async function waitUntilGone(pids: readonly number[]): Promise<number[]> {
  await until(() => alive(pids).length === 0);
  return alive(pids);
}

/**
 * Waits until `path` no longer exists, on its folder's change events (no polling); resolves to whether it went
 * away before `deadlineMs`, which only bounds a failing test.
 */
export function waitUntilRemoved(path: string, deadlineMs = 15_000): Promise<boolean> {
  return new Promise((resolve) => {
    const watcher = watch(dirname(path));
    const end = (gone: boolean) => {
      clearTimeout(deadline);
      watcher.close();
      resolve(gone);
    };
    const check = () => {
      if (!existsSync(path)) end(true);
    };
    const deadline = setTimeout(() => end(!existsSync(path)), deadlineMs);
    watcher.on("change", check);
    watcher.on("error", check);
    // Gone before the watcher started: no event will come.
    check();
  });
}

/** Resolves to whether `child` exits before `deadlineMs` (its `exit` event; the deadline bounds a failing test). */
export function exitsWithin(child: ChildProcess, deadlineMs = 15_000): Promise<boolean> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve(true);
      return;
    }
    const onExit = () => {
      clearTimeout(deadline);
      resolve(true);
    };
    const deadline = setTimeout(() => {
      child.off("exit", onExit);
      resolve(false);
    }, deadlineMs);
    child.once("exit", onExit);
  });
}

export interface ReadyRank {
  readonly rank: number;
  readonly pid: number;
  /** The job folder (WORKPOOL_IPC_DIR) the launcher made. */
  readonly dir: string;
}

/** Parses the `[r] ready <rank> <pid> <dir>` lines printed by test/fixtures/stuck.ts and throw.ts. */
export function parseReady(lines: readonly string[]): ReadyRank[] {
  return lines
    .map((line) => {
      const m = /^(?:\[\d+\] )?ready (\d+) (\d+) (\S+)$/.exec(line);
      if (!m) throw new Error(`not a ready line: ${JSON.stringify(line)}`);
      return { rank: Number(m[1]), pid: Number(m[2]), dir: m[3] as string };
    })
    .sort((a, b) => a.rank - b.rank);
}

/** Matches the ready lines of a launched job (with rank prefix). */
export const READY = /^\[\d+\] ready \d+ \d+ \S+$/;
