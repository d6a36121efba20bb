// Test hosts made of Linux network namespaces, for multi-host runs on one machine. Each host is a namespace
// whose one veth is a port of a bridge in the root namespace, so the test process and every host reach one
// another over real TCP. A host's name is its IPv4 address, and its namespace is named after that address
// (10.77.3.2 lives in wp-10-77-3-2), which is how test/helpers/netns-agent.sh finds it without any state.
// Only the bridge, the veths and the namespaces made here are touched; every other interface and route of the
// root namespace is left alone.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomInt } from "node:crypto";
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { until } from "./pids.ts";
import { runProgram } from "./program.ts";
import { ROOT, type RunResult } from "./run.ts";

/** Absolute path of the agent that runs a program on a test host: `netns-agent.sh HOST PROGRAM ARGS...`. */
export const NETNS_AGENT = join(ROOT, "test", "helpers", "netns-agent.sh");

/** Debian's sshd; it must be started by its absolute path (it re-executes itself). */
export const SSHD = "/usr/sbin/sshd";

/** Tries to pick a free random /24 this many times before giving up. */
const SUBNET_ATTEMPTS = 20;

/** A bridge port's state in /sys/class/net/PORT/brport/state when it forwards frames. */
const BR_STATE_FORWARDING = "3";

export interface TestHost {
  /** The host's name: its IPv4 address as text (what a host list or the agent is given). */
  readonly name: string;
  /** Its network namespace (`ip netns exec <ns> ...`), named after the address: `wp-10-77-3-2`. */
  readonly ns: string;
  /** Its IPv4 address on the bridge's /24. */
  readonly address: string;
  /** The root-namespace end of its veth, a port of the bridge (the namespace end is `eth0`). */
  readonly veth: string;
}

export interface TestHosts {
  readonly hosts: readonly TestHost[];
  /** The bridge's name in the root namespace. */
  readonly bridge: string;
  /** The root namespace's address on the bridge (the `.1` of the /24): how hosts reach the test process. */
  readonly bridgeAddress: string;
  /** The agent as one command, for `workpool launch --agent "<agent>"`: it is called as `<agent> HOST PROGRAM ARGS...`. */
  readonly agent: string;
  /** Pids of the processes running in `host`'s namespace (`ip netns pids`); empty once the hosts are removed. */
  pids(host: TestHost): number[];
  /** Runs `argv` inside `host` to the end and collects its output; resolves whatever its exit status. */
  exec(host: TestHost, argv: readonly string[]): Promise<RunResult>;
  /** Starts `argv` inside `host` (stdin ignored, stdout and stderr piped); the child's pid is the program's. */
  spawn(host: TestHost, argv: readonly string[]): ChildProcess;
  /**
   * Unplugs `host`: frames to and from it are dropped (its bridge port goes down), so connections to it hang
   * instead of being refused, and its own connections hang too. Addresses are resolved by static neighbour
   * entries, so no ARP failure turns the silence into "host unreachable".
   */
  isolate(host: TestHost): Promise<void>;
  /** Plugs `host` back in; resolves once its bridge port forwards frames again. */
  unisolate(host: TestHost): Promise<void>;
  /**
   * Kills every process in the namespaces, then deletes the veths, the bridge and the namespaces; rejects if
   * any of them is still there. Idempotent: later (and concurrent) calls share the first call's promise.
   */
  remove(): Promise<void>;
}

export interface MakeHostsOptions {
  /**
   * The /24 to use, as its first three octets (`10.77.3`): the bridge gets `.1`, the hosts `.2`, `.3`, ...
   * @default a random /24 of 10.0.0.0/8 that no route or address of the root namespace overlaps and no other
   * test run holds (holding it means having made its bridge, which only one process can do)
   */
  readonly subnet?: string;
}

/** The names and addresses of a set of hosts on one /24, before anything is made. */
interface Layout {
  readonly hosts: readonly TestHost[];
  readonly bridge: string;
  readonly bridgeAddress: string;
}

/** Runs `ip args...` (with `input` as its batch of commands, if given); rejects with its stderr if it fails. */
async function ip(args: readonly string[], input?: string): Promise<string> {
  const result = await runProgram(["ip", ...args], { input });
  if (result.code !== 0) {
    throw new Error(`ip ${args.join(" ")} failed (${result.code ?? result.signal}): ${result.stderr.trim()}`);
  }
  return result.stdout;
}

/** Runs `file args...` synchronously; undefined if it could not run or failed. For the exit-time cleanup. */
function commandSync(file: string, args: readonly string[], input?: string): string | undefined {
  try {
    return execFileSync(file, args, { encoding: "utf8", input, stdio: ["pipe", "pipe", "pipe"] });
  } catch {
    return undefined;
  }
}

/** The locally administered MAC address the hosts use for `address` (fixed, so neighbours can be static). */
function macOf(address: string): string {
  const octets = address.split(".").map((o) => Number(o).toString(16).padStart(2, "0"));
  return `02:00:${octets.join(":")}`;
}

/** The names and addresses of `count` hosts on `prefix`.0/24. */
function layoutOf(prefix: string, count: number): Layout {
  const tag = prefix
    .split(".")
    .slice(1)
    .map((o) => Number(o).toString(16).padStart(2, "0"))
    .join("");
  const hosts = Array.from({ length: count }, (_, i): TestHost => {
    const address = `${prefix}.${i + 2}`;
    // Interface names have at most 15 characters: wpv4d03h254 is 11.
    return { name: address, ns: `wp-${address.replaceAll(".", "-")}`, address, veth: `wpv${tag}h${i + 2}` };
  });
  return { hosts, bridge: `wpbr${tag}`, bridgeAddress: `${prefix}.1` };
}

/** An IPv4 prefix (`a.b.c.d/len`, or a bare address) as a number and a length. */
function parsePrefix(text: string): { readonly base: number; readonly length: number } {
  const [address = "", length = "32"] = text.split("/");
  const base = address.split(".").reduce((n, octet) => n * 256 + Number(octet), 0);
  return { base, length: Number(length) };
}

/** Whether two IPv4 prefixes share an address (one holds the other). */
function overlaps(a: string, b: string): boolean {
  const p = parsePrefix(a);
  const q = parsePrefix(b);
  const length = Math.min(p.length, q.length);
  const size = 2 ** (32 - length);
  return Math.floor(p.base / size) === Math.floor(q.base / size);
}

/** Whether a route (other than a default route) or an address of the root namespace overlaps `prefix`.0/24. */
async function inUse(prefix: string): Promise<boolean> {
  const routes = JSON.parse(await ip(["-j", "-4", "route", "show", "table", "all"])) as { dst: string }[];
  const links = JSON.parse(await ip(["-j", "-4", "addr", "show"])) as {
    addr_info: { local: string; prefixlen: number }[];
  }[];
  const taken = [
    ...routes.map((r) => r.dst).filter((dst) => dst !== "default"),
    ...links.flatMap((l) => l.addr_info.map((a) => `${a.local}/${a.prefixlen}`)),
  ];
  return taken.some((net) => overlaps(net, `${prefix}.0/24`));
}

/** Checks `subnet` (three octets in 10.0.0.0/8) and returns it. */
function checkSubnet(subnet: string): string {
  const octets = subnet.split(".");
  const ok = octets.length === 3 && octets[0] === "10" && octets.every((o) => /^\d{1,3}$/.test(o) && Number(o) <= 255);
  if (!ok) {
    throw new Error(`makeHosts option \`subnet\` must be three octets in 10.0.0.0/8 like 10.77.3; got \`${subnet}\``);
  }
  return octets.map(Number).join(".");
}

/** Processes in namespace `ns` (empty if it does not exist). */
function pidsIn(ns: string): number[] {
  const out = commandSync("ip", ["netns", "pids", ns]) ?? "";
  return out
    .split("\n")
    .filter((line) => /^\d+$/.test(line))
    .map(Number);
}

/** Sends SIGKILL to every process in the namespaces; returns how many there were. */
function killAll(namespaces: readonly string[]): number {
  let found = 0;
  for (const ns of namespaces) {
    for (const pid of pidsIn(ns)) {
      found++;
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        /* gone meanwhile */
      }
    }
  }
  return found;
}

/** The `ip -batch` lines that delete what a layout made: the veths (and so their namespace ends), the bridge. */
function deletions(layout: Layout, namespaces: readonly string[]): string {
  const links = [...layout.hosts.map((h) => `link del ${h.veth}`), `link del ${layout.bridge}`];
  return [...links, ...namespaces.map((ns) => `netns del ${ns}`)].join("\n") + "\n";
}

/** Which of the layout's links and `namespaces` still exist. */
function leftovers(layout: Layout, namespaces: readonly string[]): string[] {
  const links = [layout.bridge, ...layout.hosts.map((h) => h.veth)].filter((l) => existsSync(`/sys/class/net/${l}`));
  return [...links, ...namespaces.filter((ns) => existsSync(`/run/netns/${ns}`))];
}

/** Whether every one of `ports` is up and forwarding frames. */
function forwarding(ports: readonly string[]): boolean {
  return ports.every((port) => {
    try {
      return readFileSync(`/sys/class/net/${port}/brport/state`, "utf8").trim() === BR_STATE_FORWARDING;
    } catch {
      return false;
    }
  });
}

/** Waits until `ports` forward frames; rejects naming them if they do not (a bridge port should within a tick). */
async function waitForwarding(ports: readonly string[]): Promise<void> {
  if (!(await until(() => forwarding(ports)))) throw new Error(`bridge ports ${ports.join(", ")} never forwarded`);
}

// Last-resort cleanups, run synchronously when the process exits or is ended by a signal (ava ends a worker
// that times out with SIGTERM, which skips 'exit' handlers), so a failing test leaves nothing behind.
const cleanups = new Set<() => void>();
const SIGNALS: readonly NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];

/** Runs every registered cleanup once. */
function cleanUpAll(): void {
  for (const cleanup of [...cleanups]) {
    cleanups.delete(cleanup);
    cleanup();
  }
}

/** Cleans up, then lets the signal do what it would have done without our handler. */
function onSignal(signal: NodeJS.Signals): void {
  cleanUpAll();
  unlisten();
  process.kill(process.pid, signal);
}

/** Stops listening for exit and signals. */
function unlisten(): void {
  process.off("exit", cleanUpAll);
  for (const s of SIGNALS) process.off(s, onSignal);
}

/** Registers a synchronous cleanup for exit and signals; returns the function that unregisters it. */
function onExit(cleanup: () => void): () => void {
  if (cleanups.size === 0) {
    process.on("exit", cleanUpAll);
    for (const s of SIGNALS) process.on(s, onSignal);
  }
  cleanups.add(cleanup);
  return () => {
    cleanups.delete(cleanup);
    if (cleanups.size === 0) unlisten();
  };
}

/** Makes the namespaces, veths, addresses and static neighbours of `layout`; its bridge exists already. */
async function build(layout: Layout, made: string[]): Promise<void> {
  for (const h of layout.hosts) {
    await ip(["netns", "add", h.ns]);
    made.push(h.ns);
  }
  const neighbour = (address: string, dev: string): string =>
    `neigh replace ${address} lladdr ${macOf(address)} dev ${dev} nud permanent`;
  const root = [
    ...layout.hosts.flatMap((h) => [
      `link add ${h.veth} type veth peer name eth0 address ${macOf(h.address)} netns ${h.ns}`,
      `link set ${h.veth} master ${layout.bridge} up`,
    ]),
    `addr add ${layout.bridgeAddress}/24 dev ${layout.bridge}`,
    `link set ${layout.bridge} up`,
    ...layout.hosts.map((h) => neighbour(h.address, layout.bridge)),
  ];
  await ip(["-batch", "-"], root.join("\n") + "\n");
  const peers = [layout.bridgeAddress, ...layout.hosts.map((h) => h.address)];
  for (const h of layout.hosts) {
    const inside = [
      "link set lo up",
      `addr add ${h.address}/24 dev eth0`,
      "link set eth0 up",
      ...peers.filter((p) => p !== h.address).map((p) => neighbour(p, "eth0")),
    ];
    await ip(["-n", h.ns, "-batch", "-"], inside.join("\n") + "\n");
  }
  await waitForwarding(layout.hosts.map((h) => h.veth));
}

/** Claims a /24 by making its bridge: `subnet`, or random free ones until one is not held by another run. */
async function claim(count: number, subnet: string | undefined): Promise<Layout> {
  for (let attempt = 1; attempt <= SUBNET_ATTEMPTS; attempt++) {
    const prefix = subnet ?? `10.${randomInt(256)}.${randomInt(256)}`;
    if (await inUse(prefix)) {
      if (subnet === undefined) continue;
      throw new Error(`makeHosts option \`subnet\`: ${subnet}.0/24 overlaps a route or address of the root namespace`);
    }
    const layout = layoutOf(prefix, count);
    const bridge = ["link", "add", layout.bridge, "address", macOf(layout.bridgeAddress), "type", "bridge"];
    const made = await runProgram(["ip", ...bridge, "stp_state", "0", "forward_delay", "0"]);
    if (made.code === 0) return layout;
    if (subnet !== undefined || !/exists/i.test(made.stderr)) {
      throw new Error(`cannot make bridge ${layout.bridge} for ${prefix}.0/24: ${made.stderr.trim()}`);
    }
  }
  throw new Error(`found no free /24 in 10.0.0.0/8 in ${SUBNET_ATTEMPTS} random tries`);
}

/**
 * Makes `count` test hosts (1 to 253) on one /24 of 10.0.0.0/8: each a network namespace with `lo` up and one
 * veth (`eth0`) into a new bridge in the root namespace. The test process, every host and the bridge address
 * reach one another. The caller removes them (`t.teardown(() => hosts.remove())`); if the process exits or is
 * ended by SIGINT, SIGTERM or SIGHUP first, they are removed synchronously then.
 */
export async function makeHosts(count: number, options: MakeHostsOptions = {}): Promise<TestHosts> {
  if (!Number.isInteger(count) || count < 1 || count > 253) {
    throw new Error(`makeHosts \`count\` must be an integer from 1 to 253; got \`${count}\``);
  }
  const subnet = options.subnet === undefined ? undefined : checkSubnet(options.subnet);
  const layout = await claim(count, subnet);
  const made: string[] = []; // namespaces this call made (a stale one of the same name is not ours to delete)

  const removeSync = (): void => {
    for (let round = 0; round < 3 && killAll(made) > 0; round++);
    commandSync("ip", ["-force", "-batch", "-"], deletions(layout, made));
  };
  const unregister = onExit(removeSync);
  const removeAsync = async (): Promise<void> => {
    unregister();
    const killed = await until(() => killAll(made) === 0);
    await runProgram(["ip", "-force", "-batch", "-"], { input: deletions(layout, made) });
    const left = leftovers(layout, made);
    if (!killed || left.length > 0) {
      throw new Error(`test hosts not fully removed: ${[...left, ...(killed ? [] : ["processes"])].join(", ")}`);
    }
  };

  try {
    await build(layout, made);
  } catch (e) {
    await removeAsync().catch(() => undefined);
    throw e;
  }

  let removing: Promise<void> | undefined;
  return {
    ...layout,
    agent: NETNS_AGENT,
    pids: (host) => pidsIn(host.ns),
    exec: (host, argv) => runProgram(["ip", "netns", "exec", host.ns, ...argv]),
    spawn: (host, argv) => spawn("ip", ["netns", "exec", host.ns, ...argv], { stdio: ["ignore", "pipe", "pipe"] }),
    isolate: async (host) => {
      await ip(["link", "set", host.veth, "down"]);
    },
    unisolate: async (host) => {
      await ip(["link", "set", host.veth, "up"]);
      await waitForwarding([host.veth]);
    },
    remove: () => (removing ??= removeAsync()),
  };
}

/**
 * Why test hosts cannot be made here, or undefined if they can: we must be root, and a namespace with a bridge
 * and a veth pair must be possible (tried inside a scratch namespace, so the root namespace is not touched).
 */
export async function canMakeHosts(): Promise<string | undefined> {
  if (process.platform !== "linux") return `network namespaces need Linux, not ${process.platform}`;
  if (process.getuid?.() !== 0) return "making network namespaces needs root";
  const probe = `wp-probe-${process.pid}-${randomInt(1 << 30)}`;
  try {
    const added = await runProgram(["ip", "netns", "add", probe]);
    if (added.code !== 0) return `\`ip netns add\` failed: ${added.stderr.trim()}`;
    const batch = "link add wpprobe type bridge\nlink add wpprobe0 type veth peer name wpprobe1\n";
    const links = await runProgram(["ip", "-n", probe, "-batch", "-"], { input: batch });
    if (links.code !== 0) return `cannot make a bridge and a veth pair: ${links.stderr.trim()}`;
    return undefined;
  } catch (e) {
    return `cannot run ip: ${(e as Error).message}`;
  } finally {
    await runProgram(["ip", "netns", "del", probe]).catch(() => undefined);
  }
}

/** Why sshd cannot be started in a test host, or undefined if it can (the programs are installed). */
export async function canStartSshd(): Promise<string | undefined> {
  for (const program of [SSHD, "/usr/bin/ssh", "/usr/bin/ssh-keygen"]) {
    try {
      accessSync(program, constants.X_OK);
    } catch {
      return `${program} is not installed`;
    }
  }
  return undefined;
}

export interface Sshd {
  /** The host sshd listens on (port 22 of its address). */
  readonly host: TestHost;
  /** sshd's pid (in the host's namespace). */
  readonly pid: number;
  /**
   * Options with which `ssh ...sshOptions <host address> COMMAND` logs in as root with the test's key and no
   * prompt, checking sshd's host key against a known_hosts file made for it; no user or system ssh config is read.
   */
  readonly sshOptions: readonly string[];
  /** Ends sshd (SIGTERM), waits for it to exit and deletes its folder. Open sessions are not ended (remove() ends them). Idempotent. */
  stop(): Promise<void>;
}

/**
 * One set of ssh options that logs in to every one of `sshds`: the first one's options, with every sshd's
 * known_hosts file and every client key.
 */
export function sshOptionsForAll(sshds: readonly Sshd[]): string[] {
  const [first, ...others] = sshds as [Sshd, ...Sshd[]];
  const knownHosts = (d: Sshd): string => {
    const found = d.sshOptions.find((o) => o.startsWith("UserKnownHostsFile="));
    if (found === undefined) throw new Error(`no UserKnownHostsFile in ${d.sshOptions.join(" ")}`);
    return found.slice("UserKnownHostsFile=".length);
  };
  const allKnown = sshds.map(knownHosts).join(" ");
  return [
    ...first.sshOptions.map((o) => (o.startsWith("UserKnownHostsFile=") ? `UserKnownHostsFile=${allKnown}` : o)),
    ...others.flatMap((d) => ["-i", d.sshOptions[d.sshOptions.indexOf("-i") + 1] as string]),
  ];
}

/** Makes an ed25519 key pair without a passphrase at `path` and `path`.pub. */
async function keygen(path: string): Promise<void> {
  const result = await runProgram(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "workpool-test", "-f", path]);
  if (result.code !== 0) throw new Error(`ssh-keygen failed: ${result.stderr.trim()}`);
}

/** sshd's configuration: root logs in only with the key in `dir`, and sessions get node's folder on their PATH. */
function sshdConfig(dir: string, host: TestHost): string {
  // sshd gives sessions its compiled-in PATH (for root /usr/local/sbin:...:/bin), which misses a node installed
  // elsewhere; SetEnv (OpenSSH 8.7+) replaces it. Debian's bash still reads root's ~/.bashrc for an ssh command,
  // which may put more folders in front.
  const path = [
    dirname(process.execPath),
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
  ];
  return [
    `ListenAddress ${host.address}:22`,
    `HostKey ${join(dir, "host_key")}`,
    `PidFile ${join(dir, "sshd.pid")}`,
    `AuthorizedKeysFile ${join(dir, "authorized_keys")}`,
    "PermitRootLogin prohibit-password",
    "PubkeyAuthentication yes",
    "PasswordAuthentication no",
    "KbdInteractiveAuthentication no",
    "UsePAM no",
    // The key files live under /tmp, which is world-writable: strict modes would refuse them.
    "StrictModes no",
    `SetEnv "PATH=${path.join(":")}"`,
    "",
  ].join("\n");
}

/** Resolves when sshd's stderr says it listens; rejects if it exits first. */
function listening(child: ChildProcess, log: () => string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onData = (): void => {
      if (!/Server listening on /.test(log())) return;
      child.stderr?.off("data", onData);
      child.off("exit", onExit);
      resolve();
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      reject(new Error(`sshd exited (code ${code}, signal ${signal}) before listening:\n${log()}`));
    };
    child.stderr?.on("data", onData);
    child.once("exit", onExit);
    child.once("error", reject);
  });
}

/**
 * Starts Debian's real sshd in `host` on port 22 of its address, in the foreground (`-D -e`, a child of ours),
 * with a host key, a client key, its configuration and its pid file in a private temporary folder (mode 0700).
 * Resolves once it listens. sshd shares the file system and the pid space with us, so remote commands find
 * the same node and paths. Removing the hosts also ends it; its folder is deleted by stop() or at exit.
 */
export async function startSshd(hosts: TestHosts, host: TestHost): Promise<Sshd> {
  mkdirSync("/run/sshd", { recursive: true, mode: 0o755 }); // sshd's privilege separation folder
  const dir = mkdtempSync(join(tmpdir(), "workpool-sshd-"));
  let child: ChildProcess | undefined;
  const unregister = onExit(() => {
    child?.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });
  try {
    await keygen(join(dir, "host_key"));
    await keygen(join(dir, "client_key"));
    writeFileSync(join(dir, "authorized_keys"), readFileSync(join(dir, "client_key.pub")));
    writeFileSync(join(dir, "known_hosts"), `${host.address} ${readFileSync(join(dir, "host_key.pub"), "utf8")}`);
    writeFileSync(join(dir, "sshd_config"), sshdConfig(dir, host));
    child = hosts.spawn(host, [SSHD, "-D", "-e", "-f", join(dir, "sshd_config")]);
    let log = "";
    child.stdout?.resume();
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (log = (log + chunk).slice(-20_000)));
    await listening(child, () => log);
  } catch (e) {
    child?.kill("SIGKILL");
    unregister();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }

  const sshd = child;
  const exited = new Promise<void>((resolve) => {
    if (sshd.exitCode !== null || sshd.signalCode !== null) resolve();
    else sshd.once("exit", () => resolve());
  });
  let stopping: Promise<void> | undefined;
  const stop = async (): Promise<void> => {
    sshd.kill("SIGTERM");
    await exited;
    unregister();
    rmSync(dir, { recursive: true, force: true });
  };
  const options: [string, string][] = [
    ["IdentitiesOnly", "yes"],
    ["User", "root"],
    ["UserKnownHostsFile", join(dir, "known_hosts")],
    ["GlobalKnownHostsFile", "/dev/null"],
    ["StrictHostKeyChecking", "yes"],
    ["BatchMode", "yes"],
    ["LogLevel", "ERROR"],
  ];
  return {
    host,
    pid: sshd.pid as number,
    sshOptions: ["-F", "/dev/null", "-i", join(dir, "client_key"), ...options.flatMap(([k, v]) => ["-o", `${k}=${v}`])],
    stop: () => (stopping ??= stop()),
  };
}
