// What PostgreSQL refuses to store, or would store as something other than what was sent, checked before
// anything is sent to it. A value that fails inside a transaction fails everything that shares it (a batch
// of enqueues, a projection's page), so every input is held to these rules where it comes in, and the
// refusal names the field instead of surfacing as a fault.
//
// - text and jsonb cannot hold U+0000;
// - a lone UTF-16 surrogate is not Unicode: jsonb refuses its escape, and text would silently store U+FFFD
//   (so two different ids could become one);
// - jsonb's parser recurses per level and stops at the server's stack depth, a few thousand levels:
//   payloads are held to MAX_JSON_DEPTH, far below it and far above any real command;
// - a JSON number arrives as a double: an integer beyond 2^53 (123456789012345678901234567890) has already
//   lost digits and would be stored as another number, and NaN/Infinity are not JSON at all;
// - timestamps are held to the years 1 to 9999 (ISO 8601 without expanded years), within PostgreSQL's range.

/** Nesting levels of a JSON value (an object or array inside another adds one), at most. */
export const MAX_JSON_DEPTH = 64;

// With the `u` flag a lone surrogate is a code point of category Cs; a proper pair is one astral code point.
const LONE_SURROGATE = /\p{Cs}/u;

const EARLIEST_MS = new Date('0001-01-01T00:00:00.000Z').getTime();
const LATEST_MS = new Date('9999-12-31T23:59:59.999Z').getTime();

/** Why `text` cannot be stored as sent, or undefined. `name` is how the message calls it. */
export function textProblem(text: string, name: string): string | undefined {
  if (text.includes('\u0000')) return `${name} contains U+0000 (NUL), which cannot be stored`;
  if (LONE_SURROGATE.test(text)) return `${name} contains a lone UTF-16 surrogate (not valid Unicode)`;
  return undefined;
}

/**
 * Why `value` is not JSON that can be stored exactly, or undefined. Only null, booleans, finite numbers
 * (integers within ±2^53), storable strings, arrays and plain objects of those (with storable keys), at most
 * MAX_JSON_DEPTH levels deep and without cycles, pass. `path` names the value in the message.
 */
export function jsonProblem(value: unknown, path: string): string | undefined {
  return jsonValueProblem(value, path, 1, new Set());
}

function jsonValueProblem(value: unknown, path: string, depth: number, seen: Set<object>): string | undefined {
  if (value === null || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return numberProblem(value, path);
  if (typeof value === 'string') return textProblem(value, path);
  // JSON.stringify quietly drops undefined and functions and calls toJSON (a Date becomes a string): the
  // stored value would differ from what was sent.
  if (typeof value !== 'object') return `${path} is ${value === undefined ? 'missing' : `a ${typeof value}`}, not JSON`;
  if (depth > MAX_JSON_DEPTH) return `${path} is nested more than ${MAX_JSON_DEPTH} levels deep`;
  if (seen.has(value)) return `${path} refers back to itself`;
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const problem = jsonValueProblem(value[i], `${path}[${i}]`, depth + 1, seen);
        if (problem) return problem;
      }
      return undefined;
    }
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) return `${path} is not a plain object`;
    for (const [key, item] of Object.entries(value)) {
      const keyProblem = textProblem(key, `a key of ${path}`);
      if (keyProblem) return keyProblem;
      const problem = jsonValueProblem(item, `${path}.${key}`, depth + 1, seen);
      if (problem) return problem;
    }
    return undefined;
  } finally {
    seen.delete(value);
  }
}

function numberProblem(value: number, path: string): string | undefined {
  if (!Number.isFinite(value)) return `${path} is ${value}, which JSON cannot hold`;
  if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
    return `${path} is an integer beyond ±2^53 (${value}), which a JSON number here cannot hold exactly: send it as a string`;
  }
  return undefined;
}

/** Why `date` cannot be stored as an instant, or undefined. */
export function instantProblem(date: Date, name: string): string | undefined {
  const ms = date.getTime();
  if (Number.isNaN(ms)) return `${name} is not a date`;
  if (ms < EARLIEST_MS || ms > LATEST_MS) return `${name} must lie between 0001-01-01 and 9999-12-31`;
  return undefined;
}
