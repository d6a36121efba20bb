// The live view of a running job (issue 31), end to end: the dashboard of a real job of 4 ranks opened in
// headless Chromium (its live values change, a rank's busy fraction and the pool's progress show, a rank killed
// under `retries` shows dead; screenshots are kept in the test's temp folder), the same essentials in headless
// Firefox (driven by WebDriver BiDi), the page's secret (403 without
// it), and `workpool top` in a pseudo-terminal (tmux) attached to a running job by its job folder.
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test, { type ExecutionContext } from "ava";
import { chromium } from "playwright-core";
import { browserMissing, findBrowser } from "../helpers/browser.ts";
import { Firefox, findFirefox, firefoxMissing } from "../helpers/firefox.ts";
import { tempFolder } from "../helpers/folders.ts";
import { needs } from "../helpers/needs.ts";
import { until, waitUntilGone } from "../helpers/pids.ts";
import { fixture, launch, type Running, startWorkpool, stderrMatch } from "../helpers/run.ts";

/**
 * A folder for a test's screenshots: removed when the test ends, unless WORKPOOL_KEEP_SCREENSHOTS is set (then its
 * path is logged, to look at them).
 */
function screenshotFolder(t: ExecutionContext): string {
  const prefix = "workpool-dashboard-test-";
  if (!process.env.WORKPOOL_KEEP_SCREENSHOTS) return tempFolder(t, prefix);
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.log(`screenshots in ${dir}`);
  return dir;
}

const JOB = fixture("dashboard-job.ts");

/** What the page functions below use of the browser's document. */
interface Page {
  readonly document: {
    querySelector(
      selector: string,
    ): { readonly dataset: Record<string, string | undefined>; textContent: string | null } | null;
  };
}

/** The `[r] pid PID FOLDER` lines of the fixture: pid by rank, and the job folder. */
async function ranksOf(job: Running, np: number): Promise<{ pids: number[]; folder: string }> {
  const lines = await job.lines(/^\[\d+\] pid \d+ /, np);
  const pids: number[] = [];
  let folder = "";
  for (const line of lines) {
    const m = /^\[(\d+)\] pid (\d+) (\S+)$/.exec(line);
    if (!m) throw new Error(`not a pid line: ${line}`);
    pids[Number(m[1])] = Number(m[2]);
    folder = m[3] as string;
  }
  return { pids, folder };
}

/** Ends a job by SIGTERM, as Ctrl-C would: it exits 143 and leaves no rank behind. */
async function stopJob(t: ExecutionContext, job: Running, pids: number[]): Promise<void> {
  job.child.kill("SIGTERM");
  const r = await job.result;
  t.is(r.code, 143, r.stderr);
  t.deepEqual(await waitUntilGone(pids), []);
}

needs(test, browserMissing())(
  "the dashboard of a running job in Chromium: live values, progress, a dead rank",
  async (t) => {
    t.timeout(180_000);
    const shots = screenshotFolder(t);
    const job = launch(["-n", "4", "--pool", "centralized,retries=3", "--dashboard", "--quiet", JOB]);
    try {
      const [, url] = (await stderrMatch(
        job,
        /dashboard at (http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9_-]+\/)\n/,
      )) as unknown as [string, string];
      const { pids } = await ranksOf(job, 4);

      // The secret guards everything: none, a wrong one, or one cut short get 403 and no page.
      const origin = new URL(url).origin;
      const secret = new URL(url).pathname.split("/")[1] as string;
      for (const path of ["/", "/state", `/${secret}`, `/${"x".repeat(secret.length)}/`, `/${secret.slice(1)}/state`]) {
        const res = await fetch(origin + path);
        t.is(res.status, 403, path);
        t.false((await res.text()).includes("workpool dashboard"), path);
      }
      t.is((await fetch(url)).status, 200);
      t.is((await fetch(`${url}state`, { method: "POST" })).status, 405);

      const browser = await chromium.launch({
        executablePath: findBrowser().path,
        args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
      });
      try {
        const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
        const errors: string[] = [];
        page.on("pageerror", (e) => errors.push(String(e)));
        page.on("console", (m) => {
          if (m.type() === "error") errors.push(m.text());
        });
        // Any request the page makes elsewhere than its launcher would be a network fetch it must not make.
        const elsewhere: string[] = [];
        page.on("request", (r) => {
          if (!r.url().startsWith(origin)) elsewhere.push(r.url());
        });
        await page.goto(url);
        // The page's functions run in the browser: self-contained, as their text (this project's TypeScript has no
        // DOM types, hence the casts). Functions, not strings: the page's Content-Security-Policy forbids eval.
        const done = () =>
          Number(
            (globalThis as unknown as Page).document.querySelector(".pool .progress[data-done]")?.dataset.done ?? -1,
          );
        await page.waitForFunction(
          () =>
            Number(
              (globalThis as unknown as Page).document.querySelector(".pool .progress[data-done]")?.dataset.done ?? -1,
            ) >= 0,
        );
        const first = await page.evaluate(done);
        // Live: the items done grow while we watch, from one update of the page to another.
        await page.waitForFunction(
          (before) =>
            Number(
              (globalThis as unknown as Page).document.querySelector(".pool .progress[data-done]")?.dataset.done ?? -1,
            ) > before,
          first,
        );
        // Some worker's busy fraction shows (the coordinator, rank 0, may be mostly dealing).
        await page.waitForFunction(() =>
          [1, 2, 3].some((r) =>
            /^([1-9]\d?|100)%/.test(
              (globalThis as unknown as Page).document.querySelector(`#rank-${r} .busy`)?.textContent ?? "",
            ),
          ),
        );
        const progress = (await page.locator(".pool .progress .label").first().textContent()) ?? "";
        t.regex(progress, /^\d+%: [\d,]+ of 1,000,000 items$/);
        t.regex((await page.locator("#status").textContent()) ?? "", /running/);
        t.is(await page.locator("#ranks tbody tr").count(), 4);
        t.regex((await page.locator(".pool .strategy").first().textContent()) ?? "", /retries=3/);
        await page.screenshot({ path: join(shots, "running.png"), fullPage: true });

        // A worker dies: the job goes on without it (retries), and the page says so.
        process.kill(pids[3] as number, "SIGKILL");
        await page.locator("#rank-3[data-state='dead']").waitFor();
        await page.locator("#stream text.dead[data-rank='3']").waitFor();
        await page.locator("#problems li.death", { hasText: "rank 3 died (killed by SIGKILL)" }).waitFor();
        t.is(await page.locator(".pool .deaths").first().textContent(), "1");
        const afterDeath = await page.evaluate(done);
        await page.waitForFunction(
          (before) =>
            Number(
              (globalThis as unknown as Page).document.querySelector(".pool .progress[data-done]")?.dataset.done ?? -1,
            ) > before,
          afterDeath,
        );
        await page.screenshot({ path: join(shots, "rank-dead.png"), fullPage: true });

        // The trace so far downloads as a Chrome trace with the ranks' tracks.
        const trace = (await (await fetch(`${url}trace.json`)).json()) as {
          traceEvents: { ph: string; pid: number }[];
        };
        t.true(trace.traceEvents.some((e) => e.ph === "C" && e.pid === 1));
        t.deepEqual(errors, []);
        t.deepEqual(elsewhere, []);
      } finally {
        await browser.close();
      }
      await stopJob(t, job, pids);
    } finally {
      job.child.kill("SIGKILL");
    }
  },
);

needs(test, firefoxMissing())(
  "the dashboard of a running job in Firefox: live values, progress, a rank's busy share, no page error",
  async (t) => {
    t.timeout(180_000);
    const shots = screenshotFolder(t);
    const job = launch(["-n", "3", "--dashboard", "--quiet", JOB]);
    try {
      const [, url] = (await stderrMatch(
        job,
        /dashboard at (http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9_-]+\/)\n/,
      )) as unknown as [string, string];
      const { pids } = await ranksOf(job, 3);
      const firefox = await Firefox.launch(findFirefox() as string);
      try {
        await firefox.goto(url);
        const done = `Number(document.querySelector(".pool .progress[data-done]")?.dataset.done ?? -1)`;
        const first = (await firefox.waitFor(done, "(v) => v >= 0")) as number;
        // Live: the items done grow from one update of the page to another.
        t.true(((await firefox.waitFor(done, `(v) => v > ${first}`)) as number) > first);
        const busy = `[0, 1, 2].map((r) => document.querySelector("#rank-" + r + " .busy")?.textContent ?? "")`;
        const shares = (await firefox.waitFor(busy, "(v) => v.some((b) => /^([1-9]\\d?|100)%/.test(b))")) as string[];
        t.true(
          shares.some((b) => /^([1-9]\d?|100)%/.test(b)),
          JSON.stringify(shares),
        );
        t.regex(
          (await firefox.evaluate(`document.querySelector(".pool .progress .label")?.textContent ?? ""`)) as string,
          /^\d+%: [\d,]+ of 1,000,000 items$/,
        );
        t.is(await firefox.evaluate(`document.querySelectorAll("#ranks tbody tr").length`), 3);
        writeFileSync(join(shots, "firefox.png"), await firefox.screenshot());
        t.deepEqual(firefox.errors, []);
        const origin = new URL(url).origin;
        // Nothing fetched from elsewhere (inline data: URLs, such as the page's font, are the page's own).
        t.deepEqual(
          firefox.requests.filter((r) => !r.startsWith(origin) && !r.startsWith("data:")),
          [],
        );
      } finally {
        await firefox.close();
      }
      await stopJob(t, job, pids);
    } finally {
      job.child.kill("SIGKILL");
    }
  },
);

const tmux = (() => {
  try {
    execFileSync("tmux", ["-V"], { stdio: "ignore" });
    return undefined;
  } catch {
    return "tmux is not installed";
  }
})();

needs(test, tmux)("workpool top in a pseudo-terminal shows a running job, attached by its job folder", async (t) => {
  t.timeout(120_000);
  const dir = tempFolder(t, "workpool-top-test-");
  const socket = join(dir, "tmux.sock");
  const job = launch(["-n", "3", "--quiet", JOB]);
  const tmuxRun = (...args: string[]) => execFileSync("tmux", ["-S", socket, ...args], { encoding: "utf8" });
  try {
    const { pids, folder } = await ranksOf(job, 3);
    // A wrong secret is refused, and said so, at once.
    const wrong = await startWorkpool(["top", "--once", "--control", `ipc://${folder}/control`, "--secret", "nope"])
      .result;
    t.is(wrong.code, 1);
    t.regex(wrong.stderr, /refused to be watched: wrong secret/);

    const bin = join(process.cwd(), "bin", "workpool.js");
    tmuxRun("new-session", "-d", "-x", "150", "-y", "40", `${process.execPath} ${bin} top ${folder}; sleep 600`);
    const screen = () => tmuxRun("capture-pane", "-p");
    // The screen is redrawn twice a second: wait for a frame with samples from every rank, and a progress bar.
    const seen = await until(
      () => /\[#*-*\] \d+% [\d,]+\/1,000,000 items/.test(screen()) && /^ +2 local +running +\d+%/m.test(screen()),
      100,
      60_000,
    );
    const text = screen();
    t.true(seen, text);
    t.regex(text, /workpool top: dashboard-job\.ts on 3 ranks, wall [\d.]+ s, running/);
    t.regex(text, /pool1 distributed/);
    t.regex(text, /RANK HOST +STATE +BUSY WAIT/);
    for (const r of [0, 1, 2]) t.regex(text, new RegExp(`^ +${r} local +running`, "m"));
    // q quits, leaving the last frame on the terminal.
    tmuxRun("send-keys", "q");
    const current = () => tmuxRun("display-message", "-p", "#{pane_current_command}").trim();
    t.true(await until(() => current() === "sleep", 100, 30_000), current());
    t.regex(screen(), /RANK HOST/);
    job.child.kill("SIGTERM");
    await job.result;
    t.deepEqual(await waitUntilGone(pids), []);
  } finally {
    try {
      tmuxRun("kill-server");
    } catch {
      /* not started */
    }
    job.child.kill("SIGKILL");
  }
});
