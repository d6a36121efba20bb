// The package as a user gets it: `npm pack` of a copy of this checkout (so its `prepare` builds dist/ there, not
// under the other tests' feet), installed offline into a new app folder; then a strict NodeNext app
// (test/fixtures/consumer/app.ts) type-checks against the packed declarations with and without skipLibCheck, a
// JavaScript app runs through `npx workpool launch` with tsx removed from the install (dist/ needs no loader),
// and the TypeScript app runs through `npx tsx` and `npx workpool launch`. A second `npm install` in the app (of a
// tiny package the test packs) keeps the tarball's copy and its dependencies, as docs/package.md promises: a
// folder installed with --install-links became a link there, and tsx, zeromq and msgpackr were removed (issue 28).
// A ConfigError thrown in the library has a stack whose frames name files the package ships (it shipped source
// maps naming lib/*.ts, which it does not). A folder install (npm links it) runs `npx workpool` too.
//
// Offline: the install uses npm's cache only, as `npm ci` of an app whose lockfile pins the package's
// dependencies as this checkout's package-lock.json does. A lockfile, and not `npm install TARBALL`, because npm
// 11 resolves a registry dependency from its full metadata document, which `npm ci` does not fetch: a machine
// whose cache only this checkout's `npm ci` filled has every tarball and none of those documents. Where the cache
// lacks a tarball (a machine that never ran `npm ci`), the tests are skipped with the names in their titles; with
// CI=true that fails.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import test from "ava";
import { fixture, linesOf, ROOT } from "../helpers/run.ts";

interface Result {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Our environment less job variables and npm's run-script variables (they would steer the npm run here). */
function environment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith("WORKPOOL_") || (k.startsWith("npm_") && k !== "npm_config_cache")) continue;
    env[k] = v;
  }
  return env;
}

function exec(command: string, args: readonly string[], cwd: string): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: environment(), stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (s: string) => (stdout += s));
    child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** The consumer app's loops line: the sum of squares below 100, the stop's value, [45, 10], a block size. */
const LOOPS = "loops 328350 found [45,10] true";
const show = (r: Result) => `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
const TSC = join(ROOT, "node_modules", "typescript", "bin", "tsc");

interface LockEntry {
  readonly version?: string;
  readonly dev?: boolean;
  readonly link?: boolean;
  readonly os?: readonly string[];
  readonly cpu?: readonly string[];
}

interface Lockfile {
  readonly lockfileVersion: number;
  readonly packages: Record<string, LockEntry>;
}

const readLock = () => JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as Lockfile;

/**
 * An app's package-lock.json for `npm ci` with the packed tarball `file` as its one dependency: the tarball's
 * entry (its integrity, dependencies and bin from its own package.json) and this checkout's entries of every
 * run-time package at the same places, so the install needs nothing but their tarballs.
 */
function appLockfile(file: string, spec: string, manifest: Record<string, unknown>): Lockfile {
  const lock = readLock();
  const packages: Record<string, unknown> = {
    "": { name: "app", dependencies: { workpool: spec } },
    "node_modules/workpool": {
      version: manifest.version,
      resolved: spec,
      integrity: `sha512-${createHash("sha512").update(readFileSync(file)).digest("base64")}`,
      dependencies: manifest.dependencies,
      bin: manifest.bin,
      engines: manifest.engines,
    },
  };
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path !== "" && !entry.dev && !entry.link) packages[path] = entry;
  }
  return { ...lock, packages } as Lockfile;
}

/** The package's run-time dependencies on this platform, name to version, as package-lock.json pins them. */
function runtimePackages(): Map<string, string> {
  const found = new Map<string, string>();
  for (const [path, version] of runtimePlaces()) {
    found.set(path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length), version);
  }
  return found;
}

/** The same packages by their places (node_modules/msgpackr/node_modules/msgpackr-extract), place to version. */
function runtimePlaces(): Map<string, string> {
  const found = new Map<string, string>();
  for (const [path, entry] of Object.entries(readLock().packages)) {
    if (path === "" || entry.dev || entry.link || entry.version === undefined) continue;
    if (entry.os && !entry.os.includes(process.platform)) continue;
    if (entry.cpu && !entry.cpu.includes(process.arch)) continue;
    found.set(path, entry.version);
  }
  return found;
}

/** The run-time packages whose tarball npm's cache lacks. */
async function missingFromCache(packages: Map<string, string>): Promise<string[]> {
  const listed = await exec("npm", ["cache", "ls"], ROOT);
  const keys = linesOf(listed.stdout);
  return [...packages]
    .filter(([name, version]) => {
      const tarball = `/${name}/-/${name.slice(name.indexOf("/") + 1)}-${version}.tgz`;
      return !keys.some((k) => k.endsWith(tarball));
    })
    .map(([name, version]) => `${name}@${version}`);
}

const packages = runtimePackages();
const missing = await missingFromCache(packages);
const required = process.env.CI === "true";
const reason = `npm's cache lacks ${missing.join(", ")} (run npm ci once with the network)`;
const serial = missing.length === 0 ? test.serial : required ? test.serial : test.serial.skip;
if (missing.length > 0 && required) {
  test.serial("CI has npm's cache the package test needs", (t) => {
    t.fail(reason);
  });
}
const suffix = missing.length > 0 && !required ? ` (skipped: ${reason})` : "";

const work = mkdtempSync(join(tmpdir(), "wp-package-"));
test.after.always(() => rmSync(work, { recursive: true, force: true }));
const copy = join(work, "workpool");
const app = join(work, "app");
const linked = join(work, "linked");
let tarball: string | undefined;

serial(`npm pack builds dist/ and packs it${suffix}`, async (t) => {
  t.timeout(300_000);
  mkdirSync(copy);
  for (const name of ["package.json", "tsconfig.json", "tsconfig.build.json", "README.md", "ARCHITECTURE.md"]) {
    cpSync(join(ROOT, name), join(copy, name));
  }
  for (const name of ["bin", "lib", "launcher", "apps", "examples"])
    cpSync(join(ROOT, name), join(copy, name), { recursive: true });
  symlinkSync(join(ROOT, "node_modules"), join(copy, "node_modules"));
  const packed = await exec("npm", ["pack", "--json", "--pack-destination", work], copy);
  t.is(packed.code, 0, show(packed));
  const [info] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf("["))) as {
    filename: string;
    files: { path: string }[];
  }[];
  tarball = join(work, info?.filename ?? "");
  const files = info?.files.map((f) => f.path) ?? [];
  t.true(files.includes("dist/lib/index.d.ts") && files.includes("dist/launcher/cli.js"), files.join(" "));
  // What the README points a package's user to ships with it.
  for (const name of ["examples/knapsack.ts", "examples/matmul-tiles.ts", "ARCHITECTURE.md"])
    t.true(files.includes(name), `${name} ships: ${files.join(" ")}`);
  // The dashboard's page is no TypeScript: the build copies it beside its server (launcher/dashboard/server.ts).
  for (const page of ["dashboard.html", "dashboard.css", "dashboard.js"]) {
    t.true(files.includes(`dist/launcher/dashboard/page/${page}`), `${page} ships: ${files.join(" ")}`);
  }
  t.false(
    files.some((f) => f.startsWith("lib/") || f.startsWith("launcher/")),
    "the sources stay out of the package",
  );
  t.deepEqual(
    files.filter((f) => f.endsWith(".map")),
    [],
    "no source maps: they name the sources, which the package does not ship",
  );
});

serial(`the tarball installs offline into an app${suffix}`, async (t) => {
  t.timeout(300_000);
  t.truthy(tarball, "packed");
  mkdirSync(app);
  const file = tarball as string;
  const spec = `file:../${basename(file)}`;
  const listed = await exec("tar", ["-xOzf", file, "package/package.json"], work);
  t.is(listed.code, 0, show(listed));
  const manifest = JSON.parse(listed.stdout) as Record<string, unknown>;
  const dependencies = { workpool: spec };
  writeFileSync(
    join(app, "package.json"),
    JSON.stringify({ name: "app", private: true, type: "module", dependencies }),
  );
  writeFileSync(join(app, "package-lock.json"), JSON.stringify(appLockfile(file, spec, manifest), null, 2));
  const installed = await exec("npm", ["ci", "--offline", "--no-audit", "--no-fund"], app);
  t.is(installed.code, 0, show(installed));
  t.is(
    JSON.parse(readFileSync(join(app, "node_modules", "msgpackr", "package.json"), "utf8")).version,
    packages.get("msgpackr"),
  );
  // @types/node as a user's devDependency; the repository's own copy (npm's cache holds its tarball, not always
  // the metadata a fresh install asks for).
  mkdirSync(join(app, "node_modules", "@types"), { recursive: true });
  symlinkSync(join(ROOT, "node_modules", "@types", "node"), join(app, "node_modules", "@types", "node"));
  for (const name of ["app.ts", "hello.mjs", "tsconfig.json", "tsconfig.skiplibcheck.json"]) {
    cpSync(fixture(join("consumer", name)), join(app, name));
  }
});

serial(`the packed World shows no internals${suffix}`, (t) => {
  const world = readFileSync(join(app, "node_modules", "workpool", "dist", "lib", "comm", "world.d.ts"), "utf8");
  const cls = world.slice(world.indexOf("export declare class World"));
  for (const name of ["sendIn", "post", "postEncoded", "listen", "encode", "allocateContext", "fail", "onFailure"]) {
    t.false(new RegExp(`\\b${name}\\(`).test(cls), `World declares ${name}`);
  }
  t.false(world.includes("postEncoded"));
});

for (const config of ["tsconfig.json", "tsconfig.skiplibcheck.json"]) {
  serial(`a strict NodeNext app type-checks against the package (${config})${suffix}`, async (t) => {
    const checked = await exec(process.execPath, [TSC, "-p", config], app);
    t.is(checked.code, 0, show(checked));
    t.is(checked.stdout, "");
  });
}

serial(`a JavaScript app runs from dist/ with no tsx installed${suffix}`, async (t) => {
  const tsx = join(app, "node_modules", "tsx");
  renameSync(tsx, `${tsx}.away`);
  try {
    const ran = await exec("npx", ["--offline", "workpool", "launch", "-n", "2", "--no-prefix", "hello.mjs"], app);
    t.is(ran.code, 0, show(ran));
    t.deepEqual(linesOf(ran.stdout).sort(), ["rank 0 of 2", "rank 1 of 2"]);
    const alone = await exec(process.execPath, ["hello.mjs"], app);
    t.deepEqual(linesOf(alone.stdout), ["rank 0 of 1"], show(alone));
  } finally {
    renameSync(`${tsx}.away`, tsx);
  }
});

serial(`a job's dashboard serves its page from the package${suffix}`, async (t) => {
  const ran = await exec(
    "npx",
    ["--offline", "workpool", "launch", "-n", "2", "--no-prefix", "--dashboard", "--dashboard-keep", "0", "hello.mjs"],
    app,
  );
  t.is(ran.code, 0, show(ran));
  t.regex(ran.stderr, /^workpool: dashboard at http:\/\/127\.0\.0\.1:\d+\/[\w-]+\/$/m);
});

serial(`a TypeScript app runs with npx tsx and npx workpool launch${suffix}`, async (t) => {
  const alone = await exec("npx", ["--offline", "tsx", "app.ts"], app);
  t.is(alone.code, 0, show(alone));
  t.deepEqual(linesOf(alone.stdout), ["total 0", "deepest 4 stopped false", LOOPS]);
  const ran = await exec("npx", ["--offline", "workpool", "launch", "-n", "3", "--no-prefix", "app.ts"], app);
  t.is(ran.code, 0, show(ran));
  const lines = linesOf(ran.stdout);
  t.is(lines.filter((l) => l === "total 3").length, 3, show(ran));
  t.is(lines.filter((l) => l === "deepest 4 stopped false").length, 3, show(ran));
  t.is(lines.filter((l) => l === LOOPS).length, 3, show(ran));
});

/** The version of each run-time package found at its place in `folder`, or undefined. */
function installedVersions(folder: string): Map<string, string | undefined> {
  const found = new Map<string, string | undefined>();
  for (const path of runtimePlaces().keys()) {
    const manifest = join(folder, path, "package.json");
    found.set(path, existsSync(manifest) ? (JSON.parse(readFileSync(manifest, "utf8")).version as string) : undefined);
  }
  return found;
}

serial(`a second npm install keeps the package and its dependencies${suffix}`, async (t) => {
  t.timeout(300_000);
  const before = installedVersions(app);
  t.deepEqual(before, runtimePlaces(), "npm ci installed every package where the lockfile puts it");
  // Another package for the app, as a user adds TypeScript after workpool: one the test packs, so that the install
  // needs nothing from the registry.
  const tiny = join(work, "tiny");
  mkdirSync(tiny);
  writeFileSync(join(tiny, "package.json"), JSON.stringify({ name: "tiny", version: "1.0.0", type: "module" }));
  writeFileSync(join(tiny, "index.js"), "export const tiny = 1;\n");
  const packed = await exec("npm", ["pack", "--pack-destination", work], tiny);
  t.is(packed.code, 0, show(packed));
  const args = ["install", "-D", "--offline", "--no-audit", "--no-fund", "../tiny-1.0.0.tgz"];
  const installed = await exec("npm", args, app);
  t.is(installed.code, 0, show(installed));
  const manifest = JSON.parse(readFileSync(join(app, "package.json"), "utf8")) as {
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  t.is(manifest.dependencies.workpool, `file:../${basename(tarball ?? "")}`);
  t.is(manifest.devDependencies.tiny, "file:../tiny-1.0.0.tgz");
  t.false(lstatSync(join(app, "node_modules", "workpool")).isSymbolicLink(), "workpool is still a copy");
  t.deepEqual(installedVersions(app), before, "the run-time packages stay as they were");
  const ran = await exec("npx", ["--offline", "workpool", "launch", "-n", "2", "--no-prefix", "app.ts"], app);
  t.is(ran.code, 0, show(ran));
  t.is(linesOf(ran.stdout).filter((l) => l === LOOPS).length, 2, show(ran));
});

/** The files and lines named by the frames of `stack` that are in `folder`. */
function framesIn(stack: string, folder: string): { file: string; line: number }[] {
  const frames: { file: string; line: number }[] = [];
  for (const [, place, line] of stack.matchAll(/^\s+at (?:.* \()?(.+?):(\d+):\d+\)?(?: \{)?$/gm)) {
    const file = place?.startsWith("file:") ? fileURLToPath(place) : (place ?? "");
    if (file.startsWith(folder)) frames.push({ file, line: Number(line) });
  }
  return frames;
}

serial(`a library error's stack names files the package ships${suffix}`, async (t) => {
  cpSync(fixture(join("consumer", "bad-option.ts")), join(app, "bad-option.ts"));
  const installed = join(app, "node_modules", "workpool");
  // Through the launcher and under tsx alone: tsx turns on Node's source maps, which the package's maps pointed at
  // lib/*.ts.
  for (const command of [
    ["workpool", "launch", "-n", "2", "--no-prefix", "bad-option.ts"],
    ["tsx", "bad-option.ts"],
  ]) {
    const ran = await exec("npx", ["--offline", ...command], app);
    t.is(ran.code, 1, show(ran));
    t.true(ran.stderr.includes("ConfigError: pool option `partner` applies to distributed pools only"), show(ran));
    const frames = framesIn(ran.stderr, installed);
    t.true(frames.length > 0, `no frame in the package:\n${show(ran)}`);
    for (const { file, line } of frames) {
      t.true(existsSync(file), `${file} is not in the package:\n${show(ran)}`);
      if (existsSync(file)) t.true(linesOf(readFileSync(file, "utf8")).length >= line, `${file}:${line}`);
    }
  }
});

serial(`a folder install (a link) runs npx workpool${suffix}`, async (t) => {
  mkdirSync(linked);
  writeFileSync(join(linked, "package.json"), JSON.stringify({ name: "linked", private: true, type: "module" }));
  const installed = await exec("npm", ["install", "--offline", "--no-audit", "--no-fund", copy], linked);
  t.is(installed.code, 0, show(installed));
  cpSync(fixture(join("consumer", "hello.mjs")), join(linked, "hello.mjs"));
  const ran = await exec("npx", ["--offline", "workpool", "launch", "-n", "2", "--no-prefix", "hello.mjs"], linked);
  t.is(ran.code, 0, show(ran));
  t.deepEqual(linesOf(ran.stdout).sort(), ["rank 0 of 2", "rank 1 of 2"]);
});
