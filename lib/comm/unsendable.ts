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
 * finish: a structure too deep for the stack, a `toJSON` that throws).
 */
export function findUnsendable(value: unknown): Unsendable | undefined {
  try {
    return walk(value, [], new Set());
  } catch {
    return undefined;
  }
}

function walk(value: unknown, path: Step[], ancestors: Set<object>): Unsendable | undefined {
  if (typeof value === "function") return { path, what: "is a function" };
  if (typeof value === "symbol") return { path, what: `is a symbol (${value.toString()})` };
  if (value === null || typeof value !== "object") return undefined;
  if (ancestors.has(value)) return { path, what: "refers back to an object that contains it (a circular structure)" };
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer || value instanceof Date || value instanceof RegExp) {
    return undefined;
  }
  ancestors.add(value);
  try {
    return walkParts(value, path, ancestors);
  } finally {
    ancestors.delete(value);
  }
}

function walkParts(value: object, path: Step[], ancestors: Set<object>): Unsendable | undefined {
  const inner = (step: Step, part: unknown) => walk(part, [...path, step], ancestors);
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
