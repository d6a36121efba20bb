import { createRequire } from "node:module";
import type * as Zmq from "zeromq";

let loaded: typeof Zmq | undefined;
/** Called once with the module when it loads (zmq-activity.ts counts the app's socket operations from then). */
const onLoad: ((zmq: typeof Zmq) => void)[] = [];
let resolved: string | undefined;

/**
 * The zeromq package, loaded with `require` on the first call. zeromq.js is CommonJS: an ESM `import` of it
 * first runs Node's CommonJS export lexer over its 40 KB index.js to find the names it exports, which cost every
 * rank about 10 ms of CPU at start (a third of what loading zeromq costs); `require` skips that. The module is
 * the same either way (an app's own `import "zeromq"` gets this instance), so zmq-activity.ts sees the app's
 * sockets too. It is loaded when a socket is first made (a world's rendezvous and transport) or a key made or
 * checked (job-key.ts), not when workpool loads: loading it takes about 6 ms, which a world of one (`launch -n 1`,
 * `node app.js`) and the launcher before it starts the ranks need not pay.
 */
export function loadZmq(): typeof Zmq {
  if (loaded === undefined) {
    loaded = createRequire(import.meta.url)("zeromq") as typeof Zmq;
    for (const f of onLoad.splice(0)) f(loaded);
  }
  return loaded;
}

/** Calls `f` with zeromq when it loads through `loadZmq` (at once if it has). */
export function whenZmqLoads(f: (zmq: typeof Zmq) => void): void {
  if (loaded !== undefined) f(loaded);
  else onLoad.push(f);
}

/**
 * True if the zeromq that `loadZmq` loads is in this process already, loaded by anyone (an app's own `import` or
 * `require` of it puts it in the CommonJS cache, where `loadZmq` then finds it, at no cost).
 */
export function zmqInProcess(): boolean {
  if (loaded !== undefined) return true;
  const require = createRequire(import.meta.url);
  resolved ??= require.resolve("zeromq");
  return require.cache[resolved] !== undefined;
}

/** Attempts of an interrupted call before its EINTR stands (a signal every millisecond still lets one through). */
const INTERRUPTED_TRIES = 100;

function interrupted(e: unknown): boolean {
  return (e as { code?: unknown } | null)?.code === "EINTR";
}

/**
 * `call()`, made again while it fails with EINTR. A ZeroMQ call that reads its socket's command mailbox (connect,
 * bind, a socket's `events`) fails with EINTR when a signal lands in that poll, and zeromq.js hands the error on.
 * A rank gets signals it did not ask for: `--node-arg=--cpu-prof` sends SIGPROF every millisecond, and one of 64
 * ranks profiled that way failed its join with "Interrupted system call". Such a call has done nothing yet when
 * it fails that way, so making it again is safe.
 */
export function uninterrupted<T>(call: () => T): T {
  for (let tries = 1; ; tries++) {
    try {
      return call();
    } catch (e) {
      if (!interrupted(e) || tries >= INTERRUPTED_TRIES) throw e;
    }
  }
}

/** `uninterrupted` for a call that returns a promise (zeromq.js's `bind`). */
export async function uninterruptedAsync<T>(call: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await call();
    } catch (e) {
      if (!interrupted(e) || tries >= INTERRUPTED_TRIES) throw e;
    }
  }
}
