// drizzle-orm/errors rather than drizzle-orm, whose index loads the query builders.
import { DrizzleError, DrizzleQueryError } from "drizzle-orm/errors";
import { StoreUnavailable } from "./failures";

/** Where faults go; `request`, when given, ties the line to that request's id. */
export type FaultLog = (message: string, detail: unknown, request?: Request) => void;

const causeOf = (error: Error) =>
  error.cause instanceof Error ? `${error.cause.name}: ${error.cause.message}` : undefined;

/**
 * A fault's detail for the log, without the values a query was run with: Drizzle puts the
 * bound parameters (plant names, token hashes) into a DrizzleQueryError's message.
 */
export function faultDetail(error: unknown): unknown {
  if (error instanceof DrizzleQueryError)
    return { name: "DrizzleQueryError", query: error.query, cause: causeOf(error) };
  if (error instanceof StoreUnavailable)
    return { name: "StoreUnavailable", kind: error.kind, cause: faultDetail(error.cause) };
  return error;
}

/** One line for a start-up failure: the driver's own words when Drizzle wrapped them. */
export function faultSummary(error: unknown): string {
  if (error instanceof StoreUnavailable && error.cause !== undefined) return faultSummary(error.cause);
  const text =
    error instanceof Error
      ? ((error instanceof DrizzleError || error instanceof DrizzleQueryError ? causeOf(error) : undefined) ??
        error.message)
      : String(error);
  return text.replace(/\s+/g, " ").trim();
}
