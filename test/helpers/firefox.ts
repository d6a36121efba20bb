/**
 * Firefox for tests that render pages, driven by WebDriver BiDi (the W3C protocol Firefox speaks itself: no patched
 * build, no extra package): a headless Firefox with a throw-away profile, one tab, navigate, evaluate (awaiting a
 * promise), screenshots, and the page's console errors and the requests it makes.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";
import { join } from "node:path";
import { findProgram } from "./mpi.ts";

/** A Firefox: $FIREFOX_PATH, or firefox-esr or firefox on PATH; undefined when there is none. */
export function findFirefox(): string | undefined {
  const given = process.env.FIREFOX_PATH;
  if (given) {
    try {
      accessSync(given, constants.X_OK);
      return given;
    } catch {
      /* not there: look on PATH */
    }
  }
  return findProgram("firefox-esr") ?? findProgram("firefox");
}

/** Why Firefox tests cannot run here (for needs()), or undefined. */
export function firefoxMissing(): string | undefined {
  return findFirefox() === undefined
    ? "no Firefox found (firefox-esr or firefox on PATH, or FIREFOX_PATH); install your system's firefox-esr package"
    : undefined;
}

interface Socket {
  on(event: "message", fn: (data: Buffer) => void): void;
  on(event: "open" | "close", fn: () => void): void;
  on(event: "error", fn: (e: Error) => void): void;
  send(data: string): void;
  close(): void;
}

export class Firefox {
  /** Console errors and uncaught exceptions of the page. */
  readonly errors: string[] = [];
  /** Every URL the page requested. */
  readonly requests: string[] = [];
  private nextId = 1;
  private readonly calls = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private context = "";

  private constructor(
    private readonly child: ChildProcess,
    private readonly socket: Socket,
    private readonly profile: string,
  ) {
    socket.on("message", (data) => {
      const msg = JSON.parse(data.toString()) as {
        id?: number;
        type: string;
        result?: unknown;
        error?: string;
        message?: string;
        method?: string;
        params?: { level?: string; text?: string; request?: { url: string } };
      };
      if (msg.id !== undefined) {
        const call = this.calls.get(msg.id);
        this.calls.delete(msg.id);
        if (msg.type === "error") call?.reject(new Error(`${msg.error}: ${msg.message}`));
        else call?.resolve(msg.result);
      } else if (msg.method === "log.entryAdded" && msg.params?.level === "error") {
        this.errors.push(msg.params.text ?? "");
      } else if (msg.method === "network.beforeRequestSent" && msg.params?.request) {
        this.requests.push(msg.params.request.url);
      }
    });
  }

  /** Starts a headless Firefox and opens a session on its first tab. */
  static async launch(path: string): Promise<Firefox> {
    const profile = mkdtempSync(join(tmpdir(), "workpool-firefox-"));
    const child = spawn(path, ["--headless", "--no-remote", "--profile", profile, "--remote-debugging-port=0"], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    // It says where it listens on stderr.
    const address = await new Promise<string>((resolve, reject) => {
      let text = "";
      child.stderr?.setEncoding("utf8");
      child.stderr?.on("data", (s: string) => {
        text += s;
        const m = /WebDriver BiDi listening on (ws:\/\/\S+)/.exec(text);
        if (m) resolve(m[1] as string);
      });
      child.once("exit", (code) => reject(new Error(`firefox exited (${code}) before listening: ${text}`)));
    });
    // The WebSocket client Playwright ships (an export of playwright-core without types): node 20 has no
    // global WebSocket without a flag.
    const { ws } = createRequire(import.meta.url)("playwright-core/lib/utilsBundle") as {
      ws: new (url: string) => Socket;
    };
    const socket = new ws(`${address}/session`);
    await new Promise<void>((resolve, reject) => {
      socket.on("open", resolve);
      socket.on("error", reject);
    });
    const ff = new Firefox(child, socket, profile);
    await ff.call("session.new", { capabilities: {} });
    await ff.call("session.subscribe", { events: ["log.entryAdded", "network.beforeRequestSent"] });
    const tree = (await ff.call("browsingContext.getTree", {})) as { contexts: { context: string }[] };
    ff.context = (tree.contexts[0] as { context: string }).context;
    return ff;
  }

  private call(method: string, params: Record<string, unknown>): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.calls.set(id, { resolve, reject });
      this.socket.send(JSON.stringify({ id, method, params }));
    });
  }

  async goto(url: string, width = 1280, height = 1000): Promise<void> {
    await this.call("browsingContext.setViewport", { context: this.context, viewport: { width, height } });
    await this.call("browsingContext.navigate", { context: this.context, url, wait: "complete" });
  }

  /** The value of `expression` in the page (as JSON carries it); a promise is awaited. Throws what the page threw. */
  async evaluate(expression: string): Promise<unknown> {
    const r = (await this.call("script.evaluate", {
      expression: `Promise.resolve(${expression}).then((v) => JSON.stringify(v))`,
      target: { context: this.context },
      awaitPromise: true,
    })) as { type: string; result?: { value?: unknown }; exceptionDetails?: { text: string } };
    if (r.type === "exception") throw new Error(`in the page: ${r.exceptionDetails?.text}`);
    const json = r.result?.value;
    return typeof json === "string" ? JSON.parse(json) : undefined;
  }

  /**
   * Resolves with the value of `probe` (an expression) once `test` (a function of it, as source) holds: checked
   * now and at every change of the document (a MutationObserver), never on a timer.
   */
  waitFor(probe: string, test: string): Promise<unknown> {
    return this.evaluate(`new Promise((resolve) => {
      const check = () => { const v = (${probe}); if ((${test})(v)) { resolve(v); return true; } return false; };
      if (!check()) new MutationObserver((_, o) => { if (check()) o.disconnect(); })
        .observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    })`);
  }

  /** A PNG of the whole page. */
  async screenshot(): Promise<Buffer> {
    const r = (await this.call("browsingContext.captureScreenshot", {
      context: this.context,
      origin: "document",
    })) as { data: string };
    return Buffer.from(r.data, "base64");
  }

  async close(): Promise<void> {
    try {
      await this.call("session.end", {});
    } catch {
      /* it may be gone already */
    }
    this.socket.close();
    if (this.child.exitCode === null) {
      const exited = new Promise((resolve) => this.child.once("exit", resolve));
      this.child.kill("SIGTERM");
      await exited;
    }
    rmSync(this.profile, { recursive: true, force: true });
  }
}
