import { Kind } from "@sinclair/typebox";
import { t } from "elysia";
import { TypeRegistry } from "elysia/type-system";

import { INT64_MAX, INT64_MIN } from "../core/plant";

const INT32_MAX = 2_147_483_647;

/*
 * Elysia coerces numeric strings ("0x10", " 5") into integers and JSON.parse rounds past 2^53:
 * these kinds take only the SPEC's exact forms, keeping the OpenAPI shape they stand for.
 */
const inInt64 = (value: bigint) => value >= INT64_MIN && value <= INT64_MAX;
const DECIMAL = /^-?[0-9]{1,20}$/;

TypeRegistry.Set(
  "Int64",
  (_schema, value) => (typeof value === "bigint" && inInt64(value)) || Number.isSafeInteger(value),
);
TypeRegistry.Set(
  "DecimalInt64",
  (schema: { minimum?: number }, value) =>
    typeof value === "string" &&
    DECIMAL.test(value) &&
    inInt64(BigInt(value)) &&
    (schema.minimum === undefined || BigInt(value) >= BigInt(schema.minimum)),
);
TypeRegistry.Set(
  "DecimalInt32",
  (schema: { minimum: number; maximum: number }, value) =>
    typeof value === "string" &&
    /^[0-9]{1,10}$/.test(value) &&
    Number(value) >= schema.minimum &&
    Number(value) <= schema.maximum,
);

TypeRegistry.Set(
  "BoundedInt",
  (schema: { minimum: number; maximum: number }, value) =>
    Number.isInteger(value) && (value as number) >= schema.minimum && (value as number) <= schema.maximum,
);

TypeRegistry.Set("Text", (schema: { minLength: number; maxLength: number }, value) => {
  if (typeof value !== "string" || !value.isWellFormed() || value.includes("\0")) return false;
  // A string has at most .length and at least .length / 2 code points: count only when needed.
  if (value.length < schema.minLength || value.length > 2 * schema.maxLength) return false;
  if (value.length <= schema.maxLength && schema.minLength <= 1) return true;
  // Code points, not UTF-16 units: a 256-character name may hold 256 emoji.
  let count = 0;
  for (const _ of value) count++;
  return count >= schema.minLength && count <= schema.maxLength;
});

const int64Doc = { type: "integer", format: "int64" } as const;

/** Else Elysia's message JSON-stringifies the input (a bigint throws); a function stays out of OpenAPI. */
export function withOwnMessage<S extends object>(schema: S): S {
  return Object.assign(schema, { error: () => describeRule(schema) });
}

/** A JSON body integer: a number when safe, else a bigint; typed as a client sends it (a number) for Eden. */
export const Int64 = (options: { description?: string } = {}) =>
  withOwnMessage(t.Unsafe<bigint | number>({ [Kind]: "Int64", ...int64Doc, ...options }));

/** Left as the checked string (read it with `BigInt()`), as Int32Query is. */
export const Int64Query = (options: { description?: string; minimum?: number; examples?: number[] } = {}) =>
  withOwnMessage(t.Unsafe<string>({ [Kind]: "DecimalInt64", ...int64Doc, ...options }));

export const Int64Param = (options: { description?: string; examples?: number[] } = {}) =>
  t
    .Transform(Int64Query(options))
    .Decode((value) => BigInt(value))
    .Encode((value) => value.toString());

/**
 * Left as the checked string (read it with `Number()`): Elysia 1.4 runs a query's Transform twice
 * per request, throwing and swallowing an error the second time, which made the list route slow.
 */
export const Int32Query = (
  options: { description?: string; minimum?: number; maximum?: number; examples?: number[] } = {},
) =>
  withOwnMessage(
    t.Unsafe<number | `${number}`>({
      [Kind]: "DecimalInt32",
      type: "integer",
      format: "int32",
      minimum: 0,
      maximum: INT32_MAX,
      ...options,
    }),
  );

/** Unsafe: t.Integer is documented as "integer or numeric string", which clients type `string | number`. */
export const Integer = (description?: string, rule: { minimum?: number } = {}) =>
  t.Unsafe<number>({ type: "integer", ...rule, ...(description && { description }) });

export const DateTime = (description: string) => t.String({ format: "date-time", description });

/** A JSON body integer from minimum to maximum, a number only (Elysia's t.Integer takes "3" too). */
export const BoundedInt = (options: { minimum: number; maximum: number; description?: string }) =>
  withOwnMessage(t.Unsafe<number>({ [Kind]: "BoundedInt", type: "integer", ...options }));

/**
 * minLength..maxLength code points. Lone surrogates (SQLite's UTF-8 would change them) and U+0000
 * (PostgreSQL's text cannot hold it) are refused on both engines alike.
 */
export const Text = (options: { minLength: number; maxLength: number; description?: string }) =>
  withOwnMessage(t.Unsafe<string>({ [Kind]: "Text", type: "string", ...options }));

/** The rule a schema states, worded for a 400's message. */
export function describeRule(schema: unknown, value?: unknown): string {
  const s = (schema ?? {}) as Record<string | symbol, unknown>;
  const kind = s[Kind];
  if (kind === "Int64" || kind === "DecimalInt64")
    return `must be an integer between ${s.minimum ?? INT64_MIN} and ${INT64_MAX}`;
  if (kind === "DecimalInt32" || kind === "BoundedInt")
    return `must be an integer between ${s.minimum} and ${s.maximum}`;
  if (kind === "Text") {
    if (typeof value === "string" && value.includes("\0")) return "must not contain the character U+0000";
    return `must be a string of ${s.minLength} to ${s.maxLength} characters`;
  }
  if (s.type === "string") {
    const min = (s.minLength as number | undefined) ?? 0;
    return s.maxLength === undefined ? "must be a string" : `must be a string of ${min} to ${s.maxLength} characters`;
  }
  if (s.type === "object") return "must be a JSON object";
  if (s.type === "array") {
    const kind = (s.minItems as number | undefined) ? "a non-empty array" : "an array";
    return s.uniqueItems === true ? `must be ${kind} of distinct values` : `must be ${kind}`;
  }
  // A value or null (a merge patch's removal): the value's rule, null allowed.
  const anyOf = s.anyOf as unknown[] | undefined;
  const constants = anyOf?.map((option) => (option as { const?: unknown }).const);
  if (constants?.length && constants.every((value) => typeof value === "string"))
    return `must be one of ${constants.join(", ")}`;
  const nonNull = anyOf?.filter((option) => (option as { type?: unknown }).type !== "null");
  if (anyOf?.length === 2 && nonNull?.length === 1) return `${describeRule(nonNull[0], value)}, or null`;
  return "is invalid";
}
