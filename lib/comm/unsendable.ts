/**
 * Where in a value msgpackr gave up, for EncodeError's message: `data.handlers[2] is a function`. This runs only
 * after msgpackr has thrown, so sending costs nothing extra: the codec makes msgpackr throw on a function (its
 * `writeFunction` hook) as it already does on a symbol, and only then walks the value again to name the spot.
 *
 * The walk follows what msgpackr encodes: own enumerable string-keyed fields of objects (class instances too),
 * array elements, Map keys and values, Set members, an Error's `cause`, and what a non-plain object's `toJSON`
 * returns. It reports the first function, symbol or circular reference it meets.
 */

/** A step from a value to a part of it, as `where` prints it. */
export type Step =
  | string
  | number
  | { readonly mapKey: number }
  | { readonly mapValue: unknown }
  | { readonly setMember: number }
  | "toJSON()";

export interface Unsendable {
  /** The steps from the top of the value to the bad part (empty: the value itself). */
  readonly path: readonly Step[];
  /** What is wrong with it, to follow the path in a message: "is a function". */
  readonly what: string;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** `root` followed by `path` in JavaScript notation: `data.a[2].get("k")`. */
export function where(root: string, path: readonly Step[]): string {
  let s = root;
  for (const step of path) {
    if (typeof step === "number") s += `[${step}]`;
    else if (step === "toJSON()") s += ".toJSON()";
    else if (typeof step === "string") s += IDENTIFIER.test(step) ? `.${step}` : `[${JSON.stringify(step)}]`;
    else if ("mapKey" in step) s += `.keys()[${step.mapKey}]`;
    else if ("mapValue" in step) s += `.get(${keyText(step.mapValue)})`;
    else s += `.values()[${step.setMember}]`;
  }
  return s;
}

function keyText(key: unknown): string {
  if (typeof key === "string") return JSON.stringify(key.length > 40 ? `${key.slice(0, 37)}...` : key);
  if (typeof key === "bigint") return `${key}n`;
  if (key === null || (typeof key !== "object" && typeof key !== "function")) return String(key);
  return "<an object>";
}

/**
 * The first part of `value` msgpackr cannot encode faithfully, or undefined if the walk finds none (or cannot
 * finish: a structure too deep for the stack, a `toJSON` that throws). With `instances`, a class instance the
 * codec would turn into a plain object (see `arrivesAsItIs`) is one too.
 */
export function findUnsendable(value: unknown, instances = false): Unsendable | undefined {
  try {
    return walk(value, [], new Set(), instances);
  } catch {
    return undefined;
  }
}

/** How deep `arrivesAsItIs` looks before it leaves the value to the full walk (a circle, or a deep structure). */
const QUICK_DEPTH = 32;

/**
 * Whether `value` arrives on another rank as it is: no function, symbol, circular structure, or class instance
 * (which msgpackr sends as a plain object of its own fields: its class and methods stay behind). Only numbers,
 * strings, booleans, bigints, null and undefined, arrays, plain objects (or with a null prototype), Maps, Sets,
 * Dates, RegExps, Errors, ArrayBuffers and typed arrays (Buffers too), nested in any way. For a task at `put`:
 * an app whose tasks hold a function then fails at once on any number of ranks, not only once a task moves.
 *
 * Quick: no allocation, a typeof per part, a prototype check per object. A value deeper than QUICK_DEPTH is
 * walked again by `findUnsendable`, which also finds circles.
 */
export function arrivesAsItIs(value: unknown): boolean {
  return quick(value, 0) || findUnsendable(value, true) === undefined;
}

function quick(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case "number":
    case "string":
    case "boolean":
    case "undefined":
    case "bigint":
      return true;
    case "object":
      break;
    default:
      return false;
  }
  if (value === null) return true;
  if (depth >= QUICK_DEPTH) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!quick(value[i], depth + 1)) return false;
    return true;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto === Object.prototype || proto === null) {
    // (Inherited enumerable fields, on a polluted Object.prototype, only send a good value to the full walk.)
    for (const key in value) if (!quick((value as Record<string, unknown>)[key], depth + 1)) return false;
    return true;
  }
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer || value instanceof Date || value instanceof RegExp) {
    return true;
  }
  if (value instanceof Map) {
    for (const [k, v] of value) if (!quick(k, depth + 1) || !quick(v, depth + 1)) return false;
    return true;
  }
  if (value instanceof Set) {
    for (const member of value) if (!quick(member, depth + 1)) return false;
    return true;
  }
  if (value instanceof Error) return quick(value.cause, depth + 1);
  return false;
}

/** The class a non-plain object was made by, for messages: `Job`, or `an object with a prototype of its own`. */
function className(value: object): string {
  const name = (value.constructor as { name?: unknown } | undefined)?.name;
  return typeof name === "string" && name !== "" ? `class ${name}` : "a class (an object with a prototype of its own)";
}

function walk(value: unknown, path: Step[], ancestors: Set<object>, instances: boolean): Unsendable | undefined {
  if (typeof value === "function") return { path, what: "is a function" };
  if (typeof value === "symbol") return { path, what: `is a symbol (${value.toString()})` };
  if (value === null || typeof value !== "object") return undefined;
  if (ancestors.has(value)) return { path, what: "refers back to an object that contains it (a circular structure)" };
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer || value instanceof Date || value instanceof RegExp) {
    return undefined;
  }
  if (instances && !isCarried(value)) {
    return {
      path,
      what: `is an instance of ${className(value)}, which would arrive on another rank as a plain object of its fields, without its class and methods`,
    };
  }
  ancestors.add(value);
  try {
    return walkParts(value, path, ancestors, instances);
  } finally {
    ancestors.delete(value);
  }
}

/** Whether the codec carries an object as what it is (not as a plain object of its fields). */
function isCarried(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return (
    proto === Object.prototype ||
    proto === null ||
    Array.isArray(value) ||
    value instanceof Map ||
    value instanceof Set ||
    value instanceof Error
  );
}

function walkParts(value: object, path: Step[], ancestors: Set<object>, instances: boolean): Unsendable | undefined {
  const inner = (step: Step, part: unknown) => walk(part, [...path, step], ancestors, instances);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = inner(i, value[i]);
      if (found) return found;
    }
    return undefined;
  }
  if (value instanceof Map) {
    let i = 0;
    for (const [k, v] of value) {
      const found = inner({ mapKey: i++ }, k) ?? inner({ mapValue: k }, v);
      if (found) return found;
    }
    return undefined;
  }
  if (value instanceof Set) {
    let i = 0;
    for (const member of value) {
      const found = inner({ setMember: i++ }, member);
      if (found) return found;
    }
    return undefined;
  }
  if (value instanceof Error) return inner("cause", value.cause);
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (value.constructor !== Object && typeof toJSON === "function") {
    const json: unknown = toJSON.call(value);
    return json === value ? undefined : inner("toJSON()", json);
  }
  for (const key in value) {
    if (!Object.prototype.hasOwnProperty.call(value, key)) continue;
    const found = inner(key, (value as Record<string, unknown>)[key]);
    if (found) return found;
  }
  return undefined;
}

/** Values a sender checks in full (with arrivesAsItIs) before it checks only one in SAMPLED_CHECKS. */
const FULLY_CHECKED = 1024;
const SAMPLED_CHECKS = 16;

/**
 * Whether the `n`th value (from 0) of a stream of values from the same few lines of code (a pool's handler
 * puts, a map's results) is checked: the first FULLY_CHECKED, then one in SAMPLED_CHECKS. A bad shape shows in
 * the first values; checking every one would cost about as much as the put itself.
 */
export function sampledCheck(n: number): boolean {
  return n < FULLY_CHECKED || n % SAMPLED_CHECKS === 0;
}
