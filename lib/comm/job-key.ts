import type * as Zmq from "zeromq";
import { loadZmq } from "./zmq.ts";
import { BootstrapError } from "../errors.ts";

/**
 * The job's key: one ZeroMQ CURVE key pair made for the job, the secret that lets a process take part in it.
 *
 * Every socket of the job is authenticated and encrypted with it (ipc and tcp alike): each rank's inbox and the
 * rendezvous are CURVE servers with the job's secret key, and every connection to them is a CURVE client that
 * cannot complete the handshake without the job's public key (the client encrypts its first box to it). So the
 * pair is the job's secret as a whole, public half included, and is never published. A process without it
 * (another user's, or any process on another host that can reach an endpoint) cannot finish a handshake, so
 * it can neither join, nor inject a message, nor read one: ZeroMQ drops the connection before any of its
 * bytes reach the job, and the rank goes on undisturbed. No ZAP handler is needed (it would make every new
 * connection wait for the receiving rank's JavaScript, busy with a task, to answer). The key travels in
 * the environment (WORKPOOL_KEY, never on a command line; a remote rank gets it on its standard input) and in
 * files only the job's user can read.
 *
 * Written as 80 characters: the public key then the secret key, each 40 characters of Z85 (ZeroMQ's text form).
 */
export interface JobKey {
  readonly publicKey: string;
  readonly secretKey: string;
}

const Z85_KEY = /^[0-9a-zA-Z.\-:+=^!/*?&<>()[\]{}@%$#]{40}$/;

/** A new key pair for a job. BootstrapError if this ZeroMQ build has no CURVE. */
export function makeJobKey(): JobKey {
  checkCurve();
  return loadZmq().curveKeyPair();
}

/** The 80-character text of a key (WORKPOOL_KEY). */
export function formatJobKey(key: JobKey): string {
  return key.publicKey + key.secretKey;
}

/** Reads a key written by formatJobKey; `source` names where it came from, for the error. */
export function parseJobKey(text: string, source: string): JobKey {
  const t = text.trim();
  const publicKey = t.slice(0, 40);
  const secretKey = t.slice(40);
  if (t.length !== 80 || !Z85_KEY.test(publicKey) || !Z85_KEY.test(secretKey)) {
    throw new BootstrapError(
      `${source} must be a job key: 80 characters of Z85 (as \`workpool keygen\` prints); got ${t.length} characters`,
    );
  }
  return { publicKey, secretKey };
}

/** BootstrapError unless the zeromq package was built with CURVE (libsodium or tweetnacl). */
export function checkCurve(): void {
  const zmq = loadZmq();
  if (!zmq.capability.curve) {
    throw new BootstrapError(
      `this zeromq build (libzmq ${zmq.version}) has no CURVE security, which workpool needs to authenticate a ` +
        "job's connections; reinstall the zeromq package with its prebuilt binary, or build it with libsodium",
    );
  }
}

/**
 * Socket options of a CURVE server holding the job's key (a rank's inbox, the rendezvous); none for a job
 * started without security (`workpool launch --insecure`: no key).
 */
export function serverOptions(key: JobKey | undefined): Partial<Zmq.SocketOptions<Zmq.Socket>> {
  const bounded = { handshakeInterval: HANDSHAKE_DEADLINE_MS };
  return key
    ? { ...bounded, curveServer: true, curveSecretKey: key.secretKey, curvePublicKey: key.publicKey }
    : bounded;
}

/**
 * How long a connection to a job's socket may take to finish its ZeroMQ handshake (for CURVE: to prove it holds
 * the job's key) before ZeroMQ drops it (ZMQ_HANDSHAKE_IVL; ZeroMQ's own default is 30 s). The handshake runs
 * in ZeroMQ's I/O thread, however busy the rank's JavaScript is, so a few seconds is plenty for a peer of the job
 * (one that is dropped reconnects), and a peer without the key holds a descriptor for at most this long.
 */
export const HANDSHAKE_DEADLINE_MS = 5000;

/** Socket options of a CURVE client of the job (a rank's connection to another, to the rendezvous); see above. */
export function clientOptions(key: JobKey | undefined): Partial<Zmq.SocketOptions<Zmq.Socket>> {
  return key ? { curveServerKey: key.publicKey, curvePublicKey: key.publicKey, curveSecretKey: key.secretKey } : {};
}
