// The multi-host test infrastructure itself (test/helpers/hosts.ts): hosts made of network namespaces reach one
// another and the test process, the agent runs programs on them, isolate() silences one, sshd logs in, and
// remove() leaves nothing behind. Skipped (failed under CI=true) where namespaces cannot be made.
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { connect, createServer, type AddressInfo } from "node:net";
import { createInterface } from "node:readline";
import test, { type ExecutionContext } from "ava";
import { canMakeHosts, canStartSshd, makeHosts, startSshd, type TestHost, type TestHosts } from "../helpers/hosts.ts";
import { needs } from "../helpers/needs.ts";
import { runProgram } from "../helpers/program.ts";
import { linesOf } from "../helpers/run.ts";
import { shared } from "../helpers/shared.ts";

const hostsReason = await canMakeHosts();
const withHosts = needs(test.serial, hostsReason);
const withSshd = needs(test.serial, hostsReason ?? (await canStartSshd()));

// How long a connection that must not happen is given. Silence can only be observed over some time; a
// connection to a reachable host on this bridge takes well under a millisecond.
const SILENCE_MS = 1000;

// `node -e SERVER ADDRESS`: listens on ADDRESS, prints its port, and answers each connection with the
// address the connection came from.
const SERVER = `
const server = require("net").createServer((c) => c.end(c.remoteAddress + "\\n"));
server.listen(0, process.argv[1], () => console.log(server.address().port));`;

// `node -e CLIENT ADDRESS PORT MS`: prints `reply <what the server said>`, `timeout` or `error <code>`.
const CLIENT = `
const [address, port, ms] = process.argv.slice(1);
const socket = require("net").connect(Number(port), address);
let reply = "";
socket.setEncoding("utf8").setTimeout(Number(ms), () => { console.log("timeout"); process.exit(0); });
socket.on("data", (d) => (reply += d)).on("end", () => console.log("reply " + reply.trim()));
socket.on("error", (e) => console.log("error " + e.code));`;

/** What CLIENT prints, from the test process: connects to `address`:`port` within `ms`. */
function tryConnect(address: string, port: number, ms: number): Promise<string> {
  return new Promise<string>((resolve) => {
    const socket = connect(port, address);
    let reply = "";
    const done = (outcome: string): void => {
      socket.destroy();
      resolve(outcome);
    };
    socket.setEncoding("utf8").setTimeout(ms, () => done("timeout"));
    socket.on("data", (d: string) => (reply += d));
    socket.on("end", () => done(`reply ${reply.trim()}`));
    socket.on("error", (e: NodeJS.ErrnoException) => done(`error ${e.code}`));
  });
}

/** What CLIENT prints when run in `from`. */
async function tryConnectFrom(hosts: TestHosts, from: TestHost, address: string, port: number, ms: number) {
  const result = await hosts.exec(from, [process.execPath, "-e", CLIENT, address, String(port), String(ms)]);
  if (result.code !== 0) throw new Error(`client in ${from.name} failed: ${result.stderr}`);
  return result.stdout.trim();
}

/** Starts SERVER in `host` through the agent; resolves with its pid and port, and ends it when the test ends. */
async function startServer(t: ExecutionContext, hosts: TestHosts, host: TestHost) {
  const child = spawn(hosts.agent, [host.name, process.execPath, "-e", SERVER, host.address], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  t.teardown(() => child.kill());
  const [line] = (await once(createInterface({ input: child.stdout }), "line")) as [string];
  return { pid: child.pid as number, port: Number(line) };
}

/** The network namespaces `ip netns list` shows. */
function namespaceNames(): string[] {
  return linesOf(execFileSync("ip", ["netns", "list"], { encoding: "utf8" })).map((line) => line.split(" ")[0] ?? "");
}

/** The root namespace's links (`3: wpv4d03h2@if2: <...> ...` gives wpv4d03h2). */
function linkNames(): string[] {
  return linesOf(execFileSync("ip", ["-o", "link"], { encoding: "utf8" })).map((l) => l.split(/[:@] ?/)[1] ?? "");
}

/** The hosts this file's tests share, made when the first of them asks. */
const theHosts = shared(
  test,
  () => makeHosts(3),
  (hosts) => hosts.remove(),
);

withHosts("every host runs node through the agent, with lo up and only its own address on eth0", async (t) => {
  const hosts = await theHosts();
  const script = "console.log(JSON.stringify(require('os').networkInterfaces()))";
  for (const host of hosts.hosts) {
    const result = await runProgram([hosts.agent, host.name, process.execPath, "-e", script]);
    t.is(result.code, 0, result.stderr);
    const interfaces = JSON.parse(result.stdout) as Record<string, { address: string; family: string }[]>;
    const ipv4 = (name: string) => (interfaces[name] ?? []).filter((a) => a.family === "IPv4").map((a) => a.address);
    t.deepEqual(Object.keys(interfaces).sort(), ["eth0", "lo"], host.name);
    t.deepEqual(ipv4("eth0"), [host.address]);
    t.deepEqual(ipv4("lo"), ["127.0.0.1"]);
  }
});

withHosts("the agent passes the exit status through and refuses an unknown host with status 255", async (t) => {
  const hosts = await theHosts();
  const [host] = hosts.hosts as [TestHost];
  const exit = await runProgram([hosts.agent, host.name, process.execPath, "-e", "process.exit(7)"]);
  t.is(exit.code, 7, exit.stderr);
  for (const unknown of ["10.255.255.254", "not-a-host", ""]) {
    const result = await runProgram([hosts.agent, unknown, "true"]);
    t.is(result.code, 255, unknown);
    t.regex(result.stderr, new RegExp(`unknown host ${unknown.replaceAll(".", "\\.")}`));
  }
});

withHosts("a server in one host is reachable from another host and from the root namespace", async (t) => {
  const hosts = await theHosts();
  const [a, b] = hosts.hosts as [TestHost, TestHost];
  const server = await startServer(t, hosts, a);
  t.true(hosts.pids(a).includes(server.pid), "the server runs in host A's namespace");
  t.false(hosts.pids(b).includes(server.pid));
  t.is(await tryConnectFrom(hosts, b, a.address, server.port, 10_000), `reply ${b.address}`);
  t.is(await tryConnect(a.address, server.port, 10_000), `reply ${hosts.bridgeAddress}`);

  // And every host reaches the root namespace's bridge address.
  const root = createServer((c) => c.end(`${c.remoteAddress}\n`));
  t.teardown(() => root.close());
  await new Promise<void>((resolve) => root.listen(0, hosts.bridgeAddress, resolve));
  const rootPort = (root.address() as AddressInfo).port;
  for (const host of hosts.hosts) {
    t.is(await tryConnectFrom(hosts, host, hosts.bridgeAddress, rootPort, 10_000), `reply ${host.address}`);
  }
});

withHosts("an isolated host does not answer (connections hang); unisolate brings it back", async (t) => {
  const hosts = await theHosts();
  const [a, b] = hosts.hosts as [TestHost, TestHost];
  const server = await startServer(t, hosts, a);
  await hosts.isolate(a);
  const silent = await Promise.all([
    tryConnect(a.address, server.port, SILENCE_MS),
    tryConnectFrom(hosts, b, a.address, server.port, SILENCE_MS),
    tryConnectFrom(hosts, a, b.address, 9, SILENCE_MS),
  ]);
  t.deepEqual(silent, ["timeout", "timeout", "timeout"], "from the root namespace, from host B, and out of host A");
  await hosts.unisolate(a);
  t.is(await tryConnect(a.address, server.port, 10_000), `reply ${hosts.bridgeAddress}`);
  t.is(await tryConnectFrom(hosts, b, a.address, server.port, 10_000), `reply ${b.address}`);
});

withSshd("sshd in a host runs a remote node command as root with the test's key; stop() ends it", async (t) => {
  const hosts = await theHosts();
  const host = hosts.hosts[1] as TestHost;
  const sshd = await startSshd(hosts, host);
  t.teardown(() => sshd.stop());
  t.true(hosts.pids(host).includes(sshd.pid), "sshd runs in the host's namespace");

  const os = "require('os')";
  const fields = `execPath: process.execPath, user: ${os}.userInfo().username, interfaces: ${os}.networkInterfaces()`;
  const script = `console.log(JSON.stringify({ ${fields} }))`;
  const ssh = await runProgram(["ssh", ...sshd.sshOptions, host.address, "node", "-e", `"${script}"`]);
  t.is(ssh.code, 0, ssh.stderr);
  const remote = JSON.parse(ssh.stdout) as {
    execPath: string;
    user: string;
    interfaces: Record<string, { address: string }[]>;
  };
  t.is(remote.execPath, process.execPath, "the remote PATH finds the test's node");
  t.is(remote.user, "root");
  t.deepEqual(
    (remote.interfaces.eth0 ?? []).map((a) => a.address).filter((a) => a.includes(".")),
    [host.address],
    "the remote command runs in the host's namespace",
  );

  await sshd.stop();
  t.false(hosts.pids(host).includes(sshd.pid));
  t.is(await tryConnect(host.address, 22, 10_000), "error ECONNREFUSED");
});

withHosts(
  "remove() kills the hosts' processes and leaves no namespace, veth or bridge; again is a no-op",
  async (t) => {
    const hosts = await makeHosts(2);
    t.teardown(() => hosts.remove());
    const [host] = hosts.hosts as [TestHost];
    const child = hosts.spawn(host, [process.execPath, "-e", "setInterval(() => {}, 1000); console.log('up')"]);
    const exited = once(child, "exit");
    await once(createInterface({ input: child.stdout as NodeJS.ReadableStream }), "line");
    t.deepEqual(hosts.pids(host), [child.pid]);

    await hosts.remove();
    t.deepEqual(await exited, [null, "SIGKILL"]);
    const namespaces = namespaceNames();
    for (const h of hosts.hosts) t.false(namespaces.includes(h.ns), `namespace ${h.ns} is gone`);
    const links = linkNames();
    for (const name of [hosts.bridge, ...hosts.hosts.map((h) => h.veth)]) {
      t.false(links.includes(name), `link ${name} is gone`);
    }
    await hosts.remove();
    t.deepEqual(hosts.pids(host), []);
  },
);
