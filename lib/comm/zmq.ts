import { createRequire } from "node:module";
import type * as Zmq from "zeromq";

let loaded: typeof Zmq | undefined;

/**
 * The zeromq package, loaded with `require` on the first call. zeromq.js is CommonJS: an ESM `import` of it
 * first runs Node's CommonJS export lexer over its 40 KB index.js to find the names it exports, which cost every
 * rank about 10 ms of CPU at start (a third of what loading zeromq costs); `require` skips that. The module is
 * the same either way (an app's own `import "zeromq"` gets this instance), so zmq-activity.ts sees the app's
 * sockets too. Modules that make sockets call it when they load; job-key.ts only when a key is made or checked,
 * so that reading the job's environment (the preload, the launcher before it starts the ranks) loads no zeromq.
 */
export function loadZmq(): typeof Zmq {
  loaded ??= createRequire(import.meta.url)("zeromq") as typeof Zmq;
  return loaded;
}
