import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ENV, type LauncherRecord, type RankRecord } from "../../lib/internal-start.ts";
import type { ControlServer } from "../control-server.ts";
import type { DashboardServer } from "./server.ts";
import { LiveJob } from "./state.ts";

/** How often attached `workpool top`s are sent the job's state (ms). */
export const WATCH_MS = 500;
/** The timeline columns sent to `workpool top` (the last ten seconds). */
const TOP_BINS = 20;
/** The file in a job folder that tells `workpool top` how to attach (mode 0600, in the private folder). */
export const WATCH_FILE = "watch.json";

export interface WatchOptions {
  readonly np: number;
  readonly app: string;
  readonly hostOf: (rank: number) => string | undefined;
  readonly trace?: string;
  /** Serve the page (`--dashboard[=PORT]`): the port (0: any free one), and the address to listen on. */
  readonly dashboard?: { readonly port: number; readonly host?: string };
  /**
   * After the job ends, how long the dashboard keeps showing its final state (s); Infinity: until the launcher
   * is interrupted.
   */
  readonly keepSeconds?: number;
}

/**
 * The launcher's hooks for watching a job (job.ts and record-dispatch.ts call them; each is one line there):
 * the job's live state (state.ts) fed from its records, output and exits; the dashboard's HTTP server when
 * asked for; and the feed to `workpool top`s attached over the control channel. Ranks sample only while someone
 * watches: from the start with `--dashboard`, else from the first `workpool top` on (a `{"t":"live"}` broadcast).
 */
export class JobWatch {
  readonly live: LiveJob;
  private server: DashboardServer | undefined;
  private control: ControlServer | undefined;
  private feed: NodeJS.Timeout | undefined;
  private asked = false;

  constructor(private readonly opts: WatchOptions) {
    this.live = new LiveJob(opts);
  }

  /** Variables for every rank: sample from the start when the page is served. */
  env(): Record<string, string> {
    return this.opts.dashboard ? { [ENV.reportLive]: "1" } : {};
  }

  /** Called when a `workpool top` attaches: ranks start sampling (once), and the feed runs. */
  readonly onWatch = (): void => {
    if (!this.asked && !this.opts.dashboard) this.control?.broadcast({ t: "live" });
    this.asked = true;
    this.send();
  };

  /**
   * Once the control server is up: writes the job folder's watch file (how `workpool top` attaches), starts the
   * dashboard if asked (and prints its URL), and the feed to watchers.
   */
  async attach(control: ControlServer, dir: string, secret: string, traceDir: string | undefined): Promise<void> {
    this.control = control;
    const { dashboard } = this.opts;
    if (dashboard) {
      // Loaded only for --dashboard: node's http module and the page server, with dgram and dns (loaded where
      // used, lib/comm/address.ts), took the launcher's loading from 27.0 to 25.5 ms of CPU (median of 60).
      const { DashboardServer } = await import("./server.ts");
      this.server = await DashboardServer.listen({
        live: this.live,
        secret,
        host: dashboard.host,
        port: dashboard.port,
        traceDir,
        traceFile: this.opts.trace,
        np: this.opts.np,
      });
      process.stderr.write(`workpool: dashboard at ${this.server.url}\n`);
    }
    const info = { control: control.address, secret, dashboard: this.server?.url ?? null, pid: process.pid };
    writeFileSync(join(dir, WATCH_FILE), `${JSON.stringify(info)}\n`, { mode: 0o600, flag: "wx" });
    this.feed = setInterval(() => this.send(), WATCH_MS);
    this.feed.unref();
  }

  private send(): void {
    if (!this.control || this.control.watching === 0) return;
    this.control.toWatchers(`${JSON.stringify({ t: "state", ...this.live.snapshot(-TOP_BINS, -30) })}\n`);
  }

  /** A record from a rank (undefined: one that was not well-formed). */
  record(rank: number, record: RankRecord | undefined): void {
    this.live.record(rank, record);
  }

  /** A record the launcher sent every rank. */
  broadcast(record: LauncherRecord): void {
    this.live.broadcast(record);
  }

  /**
   * The job ended with `status` (`summary`: the launcher's last line, if any): the last state goes to the
   * watchers; the dashboard shows it for `keepSeconds` more (saying so), then closes.
   */
  async finish(status: number, summary?: string): Promise<void> {
    this.live.ended(status, summary?.trim());
    this.send();
    this.control?.endWatchers();
    clearInterval(this.feed);
    if (!this.server) return;
    const keep = this.opts.keepSeconds ?? 0;
    if (keep > 0) {
      const until = keep === Infinity ? "until interrupted (Ctrl-C)" : `for ${keep} s`;
      process.stderr.write(`workpool: the job ended; its dashboard shows the final state ${until}\n`);
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          process.off("SIGINT", done);
          process.off("SIGTERM", done);
          resolve();
        };
        const timer = keep === Infinity ? undefined : setTimeout(done, keep * 1000);
        process.on("SIGINT", done);
        process.on("SIGTERM", done);
      });
    }
    await this.server.close();
  }
}
