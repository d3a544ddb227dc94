import { Kind } from "@sinclair/typebox";
import { t } from "elysia";
import { TypeRegistry } from "elysia/type-system";

import { INT64_MAX, INT64_MIN } from "../core/plant";

export { INT64_MAX, INT64_MIN };
export const INT32_MAX = 2_147_483_647;

/*
 * Elysia coerces numeric strings ("7", "0x10", " 5", "1.0") into integers, and JSON.parse rounds
 * anything past 2^53. These kinds take only the exact forms the SPEC allows; they keep the
 * OpenAPI shape ({type: integer, format: int64}) of the schema they stand for.
 */
const inInt64 = (value: bigint) => value >= INT64_MIN && value <= INT64_MAX;
const DECIMAL = /^-?[0-9]{1,20}$/;

// What the body reader gives an integer: a number when it is safe, a bigint past 2^53.
TypeRegistry.Set(
  "Int64",
  (_schema, value) => (typeof value === "bigint" && inInt64(value)) || Number.isSafeInteger(value),
);
TypeRegistry.Set(
  "DecimalInt64",
  (_schema, value) => typeof value === "string" && DECIMAL.test(value) && inInt64(BigInt(value)),
);
TypeRegistry.Set(
  "DecimalInt32",
  (schema: { minimum: number; maximum: number }, value) =>
    typeof value === "string" &&
    /^[0-9]{1,10}$/.test(value) &&
    Number(value) >= schema.minimum &&
    Number(value) <= schema.maximum,
);

/** Code points, not UTF-16 units: a 256-character name may hold 256 emoji. */
function characterCount(value: string): number {
  let count = 0;
  for (const _ of value) count++;
  return count;
}

TypeRegistry.Set("Text", (schema: { minLength: number; maxLength: number }, value) => {
  if (typeof value !== "string" || !value.isWellFormed() || value.includes("\0")) return false;
  // A string has at most .length and at least .length / 2 code points: count only when needed.
  if (value.length < schema.minLength || value.length > 2 * schema.maxLength) return false;
  if (value.length <= schema.maxLength && schema.minLength <= 1) return true;
  const count = characterCount(value);
  return count >= schema.minLength && count <= schema.maxLength;
});

const int64Doc = { type: "integer", format: "int64" } as const;

/**
 * Elysia builds a ValidationError's message by JSON-stringifying the input (which fails on a
 * bigint and is wasted work: errors.ts words its own message) unless the schema has `error`.
 * A function is used because it stays out of the OpenAPI document.
 */
export function withOwnMessage<S extends object>(schema: S): S {
  return Object.assign(schema, { error: () => describeRule(schema) });
}

/**
 * A JSON body integer, kept exact by `parseJsonBody`: a safe integer as a number, anything
 * larger as a bigint; stores bind it with `BigInt()`. Typed as what a client sends (a number;
 * a bigint cannot go through JSON.stringify), so typed clients such as Eden accept it.
 */
export const Int64 = (options: { description?: string } = {}) =>
  withOwnMessage(t.Unsafe<bigint | number>({ [Kind]: "Int64", ...int64Doc, ...options }));

/** A path segment holding a signed 64-bit integer in decimal. */
export const Int64Param = (options: { description?: string; examples?: number[] } = {}) =>
  t
    .Transform(withOwnMessage(t.Unsafe<string>({ [Kind]: "DecimalInt64", ...int64Doc, ...options })))
    .Decode((value) => BigInt(value))
    .Encode((value) => value.toString());

/**
 * A query value holding a signed 64-bit integer in decimal, left as the string that was
 * checked (read it with `BigInt()`), for the reason Int32Query gives.
 */
export const Int64Query = (options: { description?: string } = {}) =>
  withOwnMessage(t.Unsafe<string>({ [Kind]: "DecimalInt64", ...int64Doc, ...options }));

/**
 * A query value holding a non-negative 32-bit integer in decimal, left as the string that was
 * checked: read it with `Number()`. No Transform here, because Elysia 1.4 runs a query's
 * Transform twice per request (the second time on the decoded value, throwing and swallowing
 * an error), which cost the list route about 15 % of its time.
 */
export const Int32Query = (
  options: { description?: string; minimum?: number; maximum?: number; examples?: number[] } = {},
) =>
  withOwnMessage(
    // A client sends a number; the server receives the query string's text.
    t.Unsafe<number | `${number}`>({
      [Kind]: "DecimalInt32",
      type: "integer",
      format: "int32",
      minimum: 0,
      maximum: INT32_MAX,
      ...options,
    }),
  );

/**
 * A string of minLength..maxLength characters. Lone surrogates are refused because SQLite
 * stores UTF-8 and would silently change them, and U+0000 because PostgreSQL's text cannot
 * hold it: refused on both engines, so a name one of them stores the other never loses.
 */
export const Text = (options: { minLength: number; maxLength: number; description?: string }) =>
  withOwnMessage(t.Unsafe<string>({ [Kind]: "Text", type: "string", ...options }));

/** The rule a schema states (the one `value` breaks, when given), worded for a person; used in 400 messages. */
export function describeRule(schema: unknown, value?: unknown): string {
  const s = (schema ?? {}) as Record<string | symbol, unknown>;
  const kind = s[Kind];
  if (kind === "Int64" || kind === "DecimalInt64") return `must be an integer between ${INT64_MIN} and ${INT64_MAX}`;
  if (kind === "DecimalInt32") return `must be an integer between ${s.minimum} and ${s.maximum}`;
  if (kind === "Text") {
    if (typeof value === "string" && value.includes("\0")) return "must not contain the character U+0000";
    return `must be a string of ${s.minLength} to ${s.maxLength} characters`;
  }
  if (s.type === "string") {
    const min = (s.minLength as number | undefined) ?? 0;
    return s.maxLength === undefined ? "must be a string" : `must be a string of ${min} to ${s.maxLength} characters`;
  }
  if (s.type === "object") return "must be a JSON object";
  // A value or null (a merge patch's removal): the value's rule, null allowed.
  const anyOf = s.anyOf as unknown[] | undefined;
  const nonNull = anyOf?.filter((option) => (option as { type?: unknown }).type !== "null");
  if (anyOf?.length === 2 && nonNull?.length === 1) return `${describeRule(nonNull[0], value)}, or null`;
  return "is invalid";
}
