import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { chromium } from "playwright-core";

/**
 * A Chromium for tests that render pages: $CHROME_PATH, chromium or Chrome on PATH, or the one
 * `npx playwright-core install chromium` puts in Playwright's cache; `tried` lists where it looked.
 */
export function findBrowser(): { path: string | undefined; tried: string[] } {
  const names = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"];
  const tried = [
    ...(process.env.CHROME_PATH ? [process.env.CHROME_PATH] : []),
    ...(process.env.PATH ?? "").split(delimiter).flatMap((d) => (d ? names.map((n) => join(d, n)) : [])),
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
  ];
  try {
    tried.push(chromium.executablePath());
  } catch {
    /* no cache location on this platform */
  }
  const path = tried.find((p) => {
    try {
      accessSync(p, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
  return { path, tried };
}

/** Why browser tests cannot run here (for needs()), or undefined when a Chromium is there. */
export function browserMissing(): string | undefined {
  const { path, tried } = findBrowser();
  return path === undefined
    ? `no Chromium found (looked for ${tried.join(", ")}); install your system's chromium package or set CHROME_PATH`
    : undefined;
}
