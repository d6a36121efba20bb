import { randomBytes } from "node:crypto";
import { constants, type FSWatcher, watch } from "node:fs";
import { chmod, type FileHandle, open, rename, rm, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { basename, dirname } from "node:path";
import { BootstrapError } from "../errors.ts";
import { ENV } from "./env.ts";
import { formatJobKey, type JobKey, parseJobKey } from "./job-key.ts";
import { notPrivate } from "./private-folder.ts";

/**
 * Rank 0's rendezvous file, where the other ranks of a job started by mpirun or srun learn where rank 0 serves
 * the rendezvous and, when WORKPOOL_KEY is unset, the job's key (foreign.ts): written atomically and readable by
 * this user only, waited for by watching and polling its folder, read only if it is this user's and nobody
 * else's, and skipped when a job of the same id left it behind on this host.
 */

/** What the rendezvous file holds. */
export interface MeetingFile {
  /** The rendezvous's ZeroMQ endpoint. */
  readonly endpoint: string;
  /**
   * The job's key, when rank 0 made it (no WORKPOOL_KEY). With WORKPOOL_KEY set the file holds none: every rank
   * uses its own, so a rank given another key cannot join.
   */
  readonly key?: JobKey;
  /** Rank 0's process and host: a waiting rank on that host skips a file whose writer is gone (a stale one). */
  readonly pid: number;
  readonly host: string;
}

/**
 * How long a rank waits for rank 0's rendezvous file unless WORKPOOL_CONNECT_TIMEOUT_MS says otherwise: longer
 * than the connect timeout, because a network file system may show a new file to other hosts only after its
 * attribute cache expires.
 */
export const DEFAULT_FILE_WAIT_MS = 60_000;
/**
 * How often a waiting rank looks for the file besides watching its folder: a watch (inotify) does not see files
 * that another host makes on a network file system.
 */
const FILE_RECHECK_MS = 200;

/**
 * Writes the rendezvous file atomically: a temporary name in the same folder, mode 0600 (it holds the job's
 * key), then renamed over `file`. BootstrapError naming the file and its folder if that fails.
 */
export async function writeMeetingFile(file: string, content: MeetingFile): Promise<void> {
  const temp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  const text = JSON.stringify({ ...content, key: content.key ? formatJobKey(content.key) : undefined });
  try {
    await writeFile(temp, text, { mode: 0o600, flag: "wx" });
    await chmod(temp, 0o600);
    await rename(temp, file);
  } catch (cause) {
    await rm(temp, { force: true });
    throw new BootstrapError(
      `rank 0 cannot write the rendezvous file ${basename(file)} in ${dirname(file)}: ${(cause as Error).message}; ` +
        `set ${ENV.rendezvousDir} to a folder every rank sees and rank 0 may write`,
      { cause },
    );
  }
}

/**
 * Waits for rank 0's rendezvous `file` and reads it (see firstFreshFile). Rejects with BootstrapError naming the
 * file and the folder when the file is not there within `ms`, when the folder does not exist, or when the file
 * cannot be read or is not one; `who` names this rank, `why` is added to the message of the timeout.
 */
export async function waitForMeetingFile(file: string, ms: number, who: string, why = ""): Promise<MeetingFile> {
  const dir = dirname(file);
  const name = basename(file);
  const stale: number[] = [];
  let found: MeetingFile | undefined;
  try {
    found = await firstFreshFile(file, ms, (pid) => stale.push(pid));
  } catch (cause) {
    const message =
      (cause as NodeJS.ErrnoException).code === "ENOENT"
        ? `the folder ${dir} of the rendezvous file does not exist (${ENV.rendezvousDir})`
        : `cannot read the rendezvous file ${name} in ${dir}: ${(cause as Error).message}`;
    throw new BootstrapError(`${who}: ${message}`, { cause });
  }
  if (found) return found;
  const skipped = stale.length === 0 ? "" : ` (skipped a stale one left by process ${stale.at(-1)}, gone)`;
  throw new BootstrapError(
    `${who}: the rendezvous file ${name} did not appear in ${dir} within ${ms} ms (${ENV.connectTimeoutMs})${skipped}: ` +
      `rank 0 writes it there once it starts, so every rank must see that folder (${ENV.rendezvousDir}; default ` +
      `the system's temporary folder when every rank runs on one host, else the current folder)${why}`,
  );
}

/**
 * Resolves with `file`'s content once it holds a fresh one, looking whenever its folder changes (a watch) and
 * every FILE_RECHECK_MS; with undefined if none comes within `ms` (and the reads begun by then have ended). A
 * stale file (its writer was on this host and is gone: a job of the same id left it) goes to `onStale` and the
 * wait goes on. Rejects with the error of a read that fails other than for a missing file, or with the watch's
 * ENOENT when the folder does not exist.
 */
function firstFreshFile(file: string, ms: number, onStale: (pid: number) => void): Promise<MeetingFile | undefined> {
  return new Promise<MeetingFile | undefined>((resolvePromise, rejectPromise) => {
    let watcher: FSWatcher | undefined;
    let settled = false;
    const settle = (then: () => void): void => {
      if (settled) return;
      settled = true;
      watcher?.close();
      clearInterval(poll);
      clearTimeout(timer);
      then();
    };
    // The time is up only once every look begun has ended: on a loaded host the first read can take longer than
    // the whole wait, and a rank must not say the file never appeared without having read the folder once.
    let looking = 0;
    let timeUp = false;
    const giveUpIfDone = (): void => {
      if (timeUp && looking === 0) settle(() => resolvePromise(undefined));
    };
    const look = (): void => {
      if (timeUp) return;
      looking++;
      readMeetingFile(file).then(
        (found) => {
          looking--;
          if (found !== undefined && !settled) {
            if (found.host === hostname() && !isRunning(found.pid)) onStale(found.pid);
            else settle(() => resolvePromise(found));
          }
          giveUpIfDone();
        },
        (e: unknown) => settle(() => rejectPromise(e)),
      );
    };
    const poll = setInterval(look, FILE_RECHECK_MS);
    const timer = setTimeout(() => {
      timeUp = true;
      giveUpIfDone();
    }, ms);
    try {
      watcher = watch(dirname(file), look);
      watcher.on("error", () => watcher?.close());
    } catch (e) {
      // Without a watch (a file system without them, too many watches) looking every FILE_RECHECK_MS still works.
      if ((e as NodeJS.ErrnoException).code === "ENOENT") settle(() => rejectPromise(e));
    }
    // After the watch is set: a file written before it is found here, one written after it by the watch.
    look();
  });
}

/** The rendezvous file's content, or undefined while there is none. Rejects if it is unreadable or not one. */
async function readMeetingFile(file: string): Promise<MeetingFile | undefined> {
  let text: string;
  let handle: FileHandle;
  try {
    // Not through a link; and only a file of this user's that nobody else may read or write (it holds the key):
    // in a shared folder, another user could have planted one.
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    if ((e as NodeJS.ErrnoException).code === "ELOOP") throw new Error("it is a symbolic link, not a rendezvous file");
    throw e;
  }
  try {
    const why = notPrivate(await handle.stat(), "file");
    if (why !== undefined) throw new Error(`it ${why}: not a rendezvous file written by this user's rank 0`);
    text = await handle.readFile("utf8");
  } finally {
    await handle.close();
  }
  let parsed: { endpoint?: unknown; key?: unknown; pid?: unknown; host?: unknown };
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    parsed = {};
  }
  const { endpoint, key, pid, host } = parsed ?? {};
  const validPid = typeof pid === "number" && Number.isInteger(pid) && pid > 0;
  const keyOk = key === undefined || typeof key === "string";
  if (typeof endpoint !== "string" || !keyOk || !validPid || typeof host !== "string") {
    throw new Error("not a rendezvous file (expected JSON with endpoint, pid, host and maybe key)");
  }
  const parsedKey = typeof key === "string" ? parseJobKey(key, `the key in ${file}`) : undefined;
  return { endpoint, ...(parsedKey ? { key: parsedKey } : {}), pid: pid as number, host };
}

/** Whether a process with this pid exists (one of another user's counts). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
