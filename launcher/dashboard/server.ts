import { timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { FROM_SOURCE, PACKAGE_ROOT } from "../loader.ts";
import { UsageError } from "../usage-error.ts";
import type { LiveJob } from "./state.ts";
import { traceSoFar } from "./trace.ts";

/** The address the dashboard listens on unless `--dashboard-host` names another. */
export const DEFAULT_DASHBOARD_HOST = "127.0.0.1";
/**
 * Connections held at once. A page polls on one or two keep-alive connections; past this, new ones are refused
 * by the kernel's backlog and Node, so a local user who opens thousands cannot make the launcher hold them.
 */
export const MAX_CONNECTIONS = 32;
/** A request's headers must arrive within this (ms), and the whole request within REQUEST_MS. */
const HEADERS_MS = 5000;
const REQUEST_MS = 10_000;
/** A keep-alive connection with no request for this long is closed (ms). */
const IDLE_MS = 15_000;
/**
 * A snapshot serialized less than this long ago is served again (ms): many tabs, or a page that asks too often,
 * cost the launcher one serialization per period, not one per request.
 */
const REUSE_MS = 100;
/**
 * The most states made (serialized) per second, whatever asks: past it, a request gets 503 and the page asks again
 * at its next poll. A page makes 2.5 a second; this bounds what requests crafted to miss the reuse can cost.
 */
export const MAX_STATES_PER_SECOND = 20;

/** The page's files, served from the package (no network fetch): name, type. */
const ASSETS: Readonly<Record<string, string>> = {
  "": "text/html; charset=utf-8",
  "dashboard.css": "text/css; charset=utf-8",
  "dashboard.js": "text/javascript; charset=utf-8",
};
/**
 * launcher/dashboard/page/ when the launcher runs from sources; dist/launcher/dashboard/page/ from the build (which
 * copies it there: this module's own URL is no guide, as bin/bundle.js moves its code into dist/launcher/ or
 * dist/chunks/).
 */
const ASSET_DIR = new URL(FROM_SOURCE ? "launcher/dashboard/page/" : "dist/launcher/dashboard/page/", PACKAGE_ROOT);

export interface DashboardOptions {
  readonly live: LiveJob;
  /** The job's secret (the control channel's token): the first part of every path. */
  readonly secret: string;
  /** @default DEFAULT_DASHBOARD_HOST */
  readonly host?: string;
  /** 0: any free port. */
  readonly port: number;
  /** The trace folder of a job run with `--trace` (the ranks' parts so far), and the number of ranks. */
  readonly traceDir?: string;
  /** The `--trace` file, which holds the whole trace once the job has ended. */
  readonly traceFile?: string;
  readonly np: number;
  /** @default MAX_STATES_PER_SECOND */
  readonly maxStatesPerSecond?: number;
}

/**
 * The dashboard's HTTP server (node:http, no framework): every path starts with the job's secret
 * (`/SECRET/`, `/SECRET/state`, `/SECRET/dashboard.js`, `/SECRET/trace.json`); anything else, and any method
 * but GET and HEAD, gets 403 or 405 and no hint. The page polls `state` (JSON) twice a second; a slow tab just
 * asks less often, so nothing queues for it in the launcher.
 */
export class DashboardServer {
  private readonly secret: Buffer;
  private readonly assets = new Map<string, Buffer>();
  private cached: { at: number; key: string; body: string } | undefined;
  /** States made in the current second, and when it began. */
  private made = { second: 0, count: 0 };

  private constructor(
    private readonly server: Server,
    private readonly opts: DashboardOptions,
    /** The URL to print: it carries the secret. */
    readonly url: string,
  ) {
    this.secret = Buffer.from(opts.secret);
    for (const name of Object.keys(ASSETS)) {
      this.assets.set(name, readFileSync(new URL(name === "" ? "dashboard.html" : name, ASSET_DIR)));
    }
    server.on("request", (req, res) => this.handle(req, res));
  }

  static async listen(opts: DashboardOptions): Promise<DashboardServer> {
    const host = opts.host ?? DEFAULT_DASHBOARD_HOST;
    const server = createServer({ headersTimeout: HEADERS_MS, requestTimeout: REQUEST_MS, keepAliveTimeout: IDLE_MS });
    server.maxConnections = MAX_CONNECTIONS;
    server.maxRequestsPerSocket = 10_000;
    await new Promise<void>((resolve, reject) => {
      const failed = (e: Error) =>
        reject(new UsageError(`option --dashboard: cannot listen on ${host} port ${opts.port}: ${e.message}`));
      server.once("error", failed);
      server.listen(opts.port, host, () => {
        server.off("error", failed);
        resolve();
      });
    });
    // A failed accept (out of descriptors) loses a page's request, never the job.
    server.on("error", () => {});
    // Each connection's socket is unref'd: the dashboard never keeps the launcher alive by itself.
    server.on("connection", (socket) => socket.unref());
    server.unref();
    const port = (server.address() as AddressInfo).port;
    const shown = host.includes(":") ? `[${host}]` : host === "0.0.0.0" ? "127.0.0.1" : host;
    return new DashboardServer(server, opts, `http://${shown}:${port}/${opts.secret}/`);
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    res.setHeader("Cache-Control", "no-store");
    res.setHeader("X-Content-Type-Options", "nosniff");
    res.setHeader("Referrer-Policy", "no-referrer");
    const url = req.url ?? "";
    const slash = url.indexOf("/", 1);
    const given = Buffer.from(slash > 0 ? url.slice(1, slash) : url.slice(1));
    if (slash < 0 || given.length !== this.secret.length || !timingSafeEqual(given, this.secret)) {
      res.writeHead(403, { "Content-Type": "text/plain" }).end("forbidden\n");
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { Allow: "GET, HEAD", "Content-Type": "text/plain" }).end("method not allowed\n");
      return;
    }
    const rest = url.slice(slash + 1);
    const q = rest.indexOf("?");
    const path = q < 0 ? rest : rest.slice(0, q);
    const params = new URLSearchParams(q < 0 ? "" : rest.slice(q + 1));
    const asset = this.assets.get(path);
    if (asset) {
      res.writeHead(200, {
        "Content-Type": ASSETS[path] as string,
        // The page fetches nothing from anywhere else, and runs only its own script.
        "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'",
      });
      res.end(req.method === "HEAD" ? undefined : asset);
      return;
    }
    if (path === "state") {
      const bins = Number(params.get("bins") ?? 0);
      const tail = Number(params.get("tail") ?? 0);
      const body = this.state(bins, tail);
      if (body === undefined) {
        res.writeHead(503, { "Retry-After": "1", "Content-Type": "text/plain" }).end("busy\n");
        return;
      }
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(req.method === "HEAD" ? undefined : body);
      return;
    }
    if (path === "trace.json") {
      const { live, np, traceDir, traceFile } = this.opts;
      const body = JSON.stringify(traceSoFar(live, np, traceDir, traceFile));
      res.writeHead(200, {
        "Content-Type": "application/json",
        "Content-Disposition": 'attachment; filename="workpool-trace.json"',
      });
      res.end(req.method === "HEAD" ? undefined : body);
      return;
    }
    res.writeHead(404, { "Content-Type": "text/plain" }).end("not found\n");
  }

  /**
   * The snapshot as JSON, reused for REUSE_MS when asked the same; undefined when MAX_STATES_PER_SECOND have
   * been made this second already.
   */
  private state(bins: number, tail: number): string | undefined {
    const key = `${Number.isFinite(bins) ? bins : 0}/${Number.isFinite(tail) ? tail : 0}`;
    const now = Date.now();
    if (this.cached && this.cached.key === key && now - this.cached.at < REUSE_MS) return this.cached.body;
    const second = Math.floor(now / 1000);
    if (this.made.second !== second) this.made = { second, count: 0 };
    if (++this.made.count > (this.opts.maxStatesPerSecond ?? MAX_STATES_PER_SECOND)) return undefined;
    const [b, t] = key.split("/").map(Number) as [number, number];
    const body = JSON.stringify(this.opts.live.snapshot(b, t));
    this.cached = { at: now, key, body };
    return body;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
