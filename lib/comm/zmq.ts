import { createRequire } from "node:module";
import type * as Zmq from "zeromq";

/**
 * The zeromq package, loaded with `require`. zeromq.js is CommonJS: an ESM `import` of it first runs Node's
 * CommonJS export lexer over its 40 KB index.js to find the names it exports, which cost every rank about 10 ms
 * of CPU at start (a third of what loading zeromq costs); `require` skips that. The module is the same either way
 * (an app's own `import "zeromq"` gets this instance), so zmq-activity.ts sees the app's sockets too.
 */
export const zmq: typeof Zmq = createRequire(import.meta.url)("zeromq") as typeof Zmq;
