import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { notPrivate, parseControlAddress, privateFolder } from "../../lib/internal-start.ts";
import { OptionReader } from "../argv.ts";
import { UsageError } from "../usage-error.ts";
import type { Snapshot } from "./state.ts";
import { WATCH_FILE } from "./watch.ts";

export const TOP_HELP = `Usage: workpool top [options] [JOB-FOLDER]

Shows a running job in the terminal, updated twice a second: the job's wall time and status, each pool's
mode, strategy, progress (a bar where the total is known: map, parallelFor), task rate and termination
phase, and each rank's state, busy and waiting fractions, the last ten seconds of its busy fraction,
queue, tasks run and put, tasks moved in and out, messages, memory; failures, deaths and the output tail.
Attaches to a job of yours on this machine: the only one running, or the one whose job folder is given
(the folder each job makes under $TMPDIR/workpool-<uid>/; workpool top lists them when there are
several). A job on another machine: run workpool top there (over ssh), or give its control address and
secret (the part of its --dashboard URL after the port). q or Ctrl-C quits; it ends with the job.

Options:
      --control ADDR   the job's control address (ipc://PATH or tcp://HOST:PORT), with --secret
      --secret S       the job's secret
      --once           print the job's state once and exit
  -h, --help           show this help
`;

/** What `workpool top` needs to attach: the control address and the secret. */
interface Target {
  readonly control: string;
  readonly secret: string;
  /** The launcher's pid, from a job folder. */
  readonly pid?: number;
}

/** Reads a job folder's watch file, only from a folder of this user's that nobody else may enter. */
function readWatchFile(dir: string): Target {
  let why: string | undefined;
  try {
    why = notPrivate(lstatSync(dir));
  } catch (e) {
    throw new UsageError(
      `job folder ${dir}: ${(e as NodeJS.ErrnoException).code === "ENOENT" ? "no such folder" : (e as Error).message}`,
    );
  }
  if (why !== undefined) throw new UsageError(`job folder ${dir} ${why}; not reading it`);
  let fd: number;
  try {
    fd = openSync(join(dir, WATCH_FILE), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    throw new UsageError(
      `job folder ${dir} has no ${WATCH_FILE}: not a running job's folder (or a job from an older workpool)`,
    );
  }
  try {
    const fileWhy = notPrivate(fstatSync(fd), "file");
    if (fileWhy !== undefined) throw new UsageError(`${join(dir, WATCH_FILE)} ${fileWhy}; not reading it`);
    const info = JSON.parse(readFileSync(fd, "utf8").slice(0, 4096)) as Partial<Target>;
    if (typeof info.control !== "string" || typeof info.secret !== "string") throw new Error("bad watch file");
    return { control: info.control, secret: info.secret, pid: typeof info.pid === "number" ? info.pid : undefined };
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw new UsageError(`${join(dir, WATCH_FILE)} cannot be read: ${(e as Error).message}`);
  } finally {
    closeSync(fd);
  }
}

/** Whether process `pid` is there (a launcher killed with SIGKILL leaves its job folder behind). */
function running(pid: number | undefined): boolean {
  if (pid === undefined) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * The running jobs of this user on this machine: job folders in the private parent with a watch file whose
 * launcher is still there.
 */
function runningJobs(): string[] {
  const parent = privateFolder(tmpdir());
  if (!("dir" in parent)) throw new UsageError(`cannot look for jobs: ${parent.why}; give the job folder`);
  let names: string[] = [];
  try {
    names = readdirSync(parent.dir);
  } catch {
    /* none */
  }
  return names
    .filter((n) => n.startsWith("wp-"))
    .map((n) => join(parent.dir, n))
    .filter((d) => {
      try {
        return running(readWatchFile(d).pid);
      } catch {
        return false;
      }
    });
}

function parse(argv: string[]): { target: Target; once: boolean } | "help" {
  const opts = new OptionReader(argv);
  let control: string | undefined;
  let secret: string | undefined;
  let once = false;
  for (let flag = opts.next(); flag !== undefined; flag = opts.next()) {
    switch (flag) {
      case "-h":
      case "--help":
        return "help";
      case "--control":
        control = opts.value(flag);
        break;
      case "--secret":
        secret = opts.value(flag);
        break;
      case "--once":
        once = true;
        break;
      default:
        opts.unknown(flag, "top");
    }
  }
  const rest = opts.rest();
  if (rest.length > 1) throw new UsageError(`top takes one job folder; got ${rest.length} arguments`);
  const folder = rest[0];
  if (folder !== undefined && control !== undefined) throw new UsageError("give a job folder or --control, not both");
  if (control !== undefined || secret !== undefined) {
    if (control === undefined || secret === undefined) throw new UsageError("--control and --secret go together");
    try {
      parseControlAddress(control);
    } catch {
      throw new UsageError(`option --control must be ipc://PATH or tcp://HOST:PORT; got ${JSON.stringify(control)}`);
    }
    return { target: { control, secret }, once };
  }
  if (folder !== undefined) return { target: readWatchFile(resolve(folder)), once };
  const jobs = runningJobs();
  if (jobs.length === 0)
    throw new UsageError("no running job of yours on this machine (give a job folder, or --control and --secret)");
  if (jobs.length > 1) {
    throw new UsageError(`${jobs.length} jobs are running; give one of their folders:\n  ${jobs.join("\n  ")}`);
  }
  return { target: readWatchFile(jobs[0] as string), once };
}

const SPARK = " ▁▂▃▄▅▆▇█";
const n = (x: number) => Math.round(x).toLocaleString("en-US");
const pct = (x: number) => `${Math.round(x * 100)}%`.padStart(4);
const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(0);

function bar(fraction: number, width: number): string {
  const full = Math.round(Math.max(0, Math.min(1, fraction)) * width);
  return `[${"#".repeat(full)}${"-".repeat(width - full)}]`;
}

/** The frame for one state, as lines no wider than `width`. */
export function renderTop(s: Snapshot, width: number, color: boolean): string[] {
  const paint = (code: string, text: string) => (color ? `\x1b[${code}m${text}\x1b[0m` : text);
  const lines: string[] = [];
  const status = s.job.ended ? `ended, status ${s.job.status}` : "running";
  lines.push(
    paint(
      "1",
      `workpool top: ${s.job.app.split("/").pop()} on ${s.job.np} ranks, wall ${(s.job.wallMs / 1000).toFixed(1)} s, ${status}`,
    ),
  );
  for (const p of s.pools) {
    lines.push(`${paint("1", p.pool)} ${p.mode} (${p.strategy}), run ${p.run}: ${p.phase}`);
    const progress =
      p.loopTotal !== null && p.loopTotal > 0
        ? `${bar(p.loopDone / p.loopTotal, 20)} ${pct(p.loopDone / p.loopTotal).trim()} ${n(p.loopDone)}/${n(p.loopTotal)} items, ${n(p.loopRate ?? 0)} items/s, `
        : "";
    lines.push(
      `  ${progress}${n(p.done)} tasks done, ${n(p.rate)}/s, ${n(p.queued)} queued, ${n(p.movedIn)} moved, ` +
        `${p.deaths} deaths survived, ${n(p.redealt)} re-dealt`,
    );
  }
  const head =
    "RANK HOST         STATE     BUSY WAIT last 10 s busy      QUEUE       DONE        PUT     IN    OUT   MSGS RSS MB HEAP";
  lines.push(paint("7", head.padEnd(Math.min(width, head.length))));
  for (const r of s.ranks) {
    const spark = r.bins
      .slice(-20)
      .map((b) => (b && b[3] > 0 ? (SPARK[Math.round((b[0] / b[3]) * 8)] ?? " ") : " "))
      .join("")
      .padStart(20);
    const state = r.state === "dead" || r.state === "failed" ? paint("31", r.state.padEnd(9)) : r.state.padEnd(9);
    lines.push(
      `${String(r.rank).padStart(4)} ${r.host.slice(0, 12).padEnd(12)} ${state} ${r.sampled ? pct(r.busy) : "   -"} ` +
        `${r.sampled ? pct(r.waiting) : "   -"} ${spark} ${n(r.queued).padStart(6)} ${n(r.done).padStart(10)} ` +
        `${n(r.put).padStart(10)} ${n(r.movedIn).padStart(6)} ${n(r.movedOut).padStart(6)} ${n(r.msgs).padStart(6)} ` +
        `${mb(r.rss).padStart(6)} ${mb(r.heap).padStart(4)}`,
    );
  }
  for (const d of s.deaths) lines.push(paint("33", `rank ${d.rank} died (${d.why}); the job went on without it`));
  for (const f of s.failures.slice(0, 5)) lines.push(paint("31", `failure: ${f.text.split("\n")[0]}`));
  if (s.tail.length > 0) {
    lines.push(paint("2", "output (last lines):"));
    for (const l of s.tail.slice(-8)) lines.push(`[${l.rank}] ${l.text}`);
  }
  return lines.map((l) => (visibleLength(l) > width ? cut(l, width) : l));
}

function visibleLength(text: string): number {
  return text.replace(/\x1b\[[0-9;]*m/g, "").length;
}

/** Cuts a line to `width` visible characters, keeping its colour codes whole. */
function cut(text: string, width: number): string {
  let out = "";
  let shown = 0;
  for (const part of text.split(/(\x1b\[[0-9;]*m)/)) {
    if (part.startsWith("\x1b[")) out += part;
    else {
      out += part.slice(0, Math.max(0, width - shown));
      shown += part.length;
    }
  }
  return out;
}

/** `workpool top`: attaches to a job and draws its state until the job ends or the user quits. */
export async function top(argv: string[]): Promise<number> {
  const parsed = parse(argv);
  if (parsed === "help") {
    process.stdout.write(TOP_HELP);
    return 0;
  }
  const { target, once } = parsed;
  const address = parseControlAddress(target.control);
  const out = process.stdout;
  const tty = out.isTTY === true && !once;
  const socket: Socket = "path" in address ? connect(address.path) : connect(address.port, address.host);
  socket.setEncoding("utf8");
  socket.write(`${JSON.stringify({ t: "watch", token: target.secret })}\n`);
  let last: Snapshot | undefined;
  let refused: string | undefined;
  let failed: string | undefined;
  const draw = (s: Snapshot) => {
    const lines = renderTop(s, out.columns || 120, tty);
    if (tty) out.write(`\x1b[H${lines.map((l) => `${l}\x1b[K`).join("\n")}\n\x1b[J`);
    else out.write(`${lines.join("\n")}\n\n`);
  };
  if (tty) out.write("\x1b[?1049h\x1b[?25l");
  const restore = () => {
    if (tty) out.write("\x1b[?25h\x1b[?1049l");
  };
  const stdin = process.stdin;
  const done = new Promise<void>((resolveDone) => {
    let rest = "";
    socket.on("data", (chunk: string) => {
      const lines = (rest + chunk).split("\n");
      rest = lines.pop() ?? "";
      for (const line of lines) {
        let msg: { t?: string; reason?: string } & Partial<Snapshot>;
        try {
          msg = JSON.parse(line);
        } catch {
          continue;
        }
        if (msg.t === "refused") refused = String(msg.reason);
        else if (msg.t === "state") {
          last = msg as Snapshot;
          if (once) socket.destroy();
          else draw(last);
        }
      }
    });
    socket.on("error", (e) => {
      failed = e.message;
    });
    socket.on("close", () => resolveDone());
    if (tty && stdin.isTTY) {
      stdin.setRawMode(true);
      stdin.resume();
      stdin.on("data", (key: Buffer) => {
        // q, Q, Ctrl-C, Ctrl-D
        if ([0x71, 0x51, 0x03, 0x04].includes(key[0] ?? 0)) socket.destroy();
      });
    }
  });
  await done;
  restore();
  if (tty && stdin.isTTY) {
    stdin.setRawMode(false);
    stdin.pause();
  }
  if (refused !== undefined || (last === undefined && failed === undefined)) {
    const why = refused ?? "it closed the connection";
    process.stderr.write(`workpool: top: the launcher at ${target.control} refused to be watched: ${why}\n`);
    return 1;
  }
  if (last === undefined) {
    process.stderr.write(`workpool: top: cannot reach the launcher at ${target.control}: ${failed}\n`);
    return 1;
  }
  // The last frame stays on the screen (the alternate screen is gone): the job's final state, or where it was.
  if (tty || once) out.write(`${renderTop(last, out.columns || 120, false).join("\n")}\n`);
  return 0;
}
