/**
 * What both baselines (server.ts on bun:sqlite, postgres-server.ts on Bun's SQL client) answer
 * the same way, whatever their store: the fixed responses, the bearer header, the `limit`
 * query parameter and the POST /plants body.
 */
import { BodyError, type NewPlant, parseNewPlant, readBody } from "./body";
import { BARE, notes } from "./observe";

const INT32_MAX = 2_147_483_647;
/** parseLimit's answer when the query has no `limit` (SQLite also reads LIMIT -1 as "no limit"). */
export const NO_LIMIT = -1;
export const BAD_LIMIT = -2;

// ---------------------------------------------------------------------------------------------
// Responses

export const JSON_OK = { "content-type": "application/json;charset=utf-8", "x-content-type-options": "nosniff" };
const JSON_ERROR = { "content-type": "application/json", "x-content-type-options": "nosniff" };
const NO_CONTENT = { "x-content-type-options": "nosniff" };

function errorBody(status: number, message: string): string {
  return `{"error":${status},"message":${JSON.stringify(message)}}`;
}

/** A fixed error: body and headers built once, a new Response per request. */
function fixedError(status: number, message: string, extraHeaders?: Record<string, string>) {
  const body = errorBody(status, message);
  const init = { status, headers: extraHeaders ? { ...JSON_ERROR, ...extraHeaders } : JSON_ERROR };
  return () => new Response(body, init);
}

const noToken = fixedError(401, "Authentication required: send the header Authorization: Bearer <token>.", {
  "www-authenticate": "Bearer",
});
const invalidToken = fixedError(401, "The bearer token is not valid: it is unknown or has been revoked.", {
  "www-authenticate": 'Bearer error="invalid_token"',
});
export const noRoute = fixedError(404, "No route matches this path.");
export const collectionMethods = fixedError(405, "This path accepts only GET, POST.", { allow: "GET, POST" });
export const itemMethods = fixedError(405, "This path accepts only DELETE.", { allow: "DELETE" });
export const badLimit = fixedError(400, "limit: must be an integer between 0 and 2147483647");
export const badId = fixedError(400, "id: must be an integer between -9223372036854775808 and 9223372036854775807");
export const noSuchPlant = fixedError(404, "id: you have no plant with this id");
export const duplicate = fixedError(409, "id: you already have a plant with this id; delete it first to replace it");
export const fragment = fixedError(400, "The request target must not contain '#'; percent-encode it as %23.");
export const atCapacity = fixedError(503, "The service is at capacity; retry in a moment.", { "retry-after": "1" });
export const internal = fixedError(500, "Internal server error; the failure has been logged.");
const HEALTHY_BODY = '{"status":"ok"}';
const HEALTHY_HEADERS = { ...JSON_OK, "cache-control": "no-store" };
export const healthy = () => new Response(HEALTHY_BODY, { headers: HEALTHY_HEADERS });
export const deleted = () => new Response(null, { status: 204, headers: NO_CONTENT });

const bodyErrors = new Map<BodyError, () => Response>();
export function bodyError(error: BodyError): Response {
  let make = bodyErrors.get(error);
  if (make === undefined) {
    make = fixedError(error.status, error.message);
    bodyErrors.set(error, make);
  }
  return make();
}

/** A created plant as the service answers it: no `tag` when it has none. */
export function createdPlant(plant: NewPlant): Response {
  const body =
    plant.tag === null
      ? `{"name":${JSON.stringify(plant.name)}}`
      : `{"name":${JSON.stringify(plant.name)},"tag":${JSON.stringify(plant.tag)}}`;
  return new Response(body, { headers: JSON_OK });
}

// ---------------------------------------------------------------------------------------------
// Authentication

/** What an authenticate() answers instead of a user id. */
export const NO_TOKEN = -1;
export const INVALID_TOKEN = -2;

/** "Bearer" at `start`, case-insensitive (ASCII only, as the service's /i regex without the u flag). */
function isBearerScheme(header: string, start: number): boolean {
  return (
    (header.charCodeAt(start) | 0x20) === 0x62 &&
    (header.charCodeAt(start + 1) | 0x20) === 0x65 &&
    (header.charCodeAt(start + 2) | 0x20) === 0x61 &&
    (header.charCodeAt(start + 3) | 0x20) === 0x72 &&
    (header.charCodeAt(start + 4) | 0x20) === 0x65 &&
    (header.charCodeAt(start + 5) | 0x20) === 0x72
  );
}

/**
 * The bearer token, or undefined when there is none. Same rules as src/auth/plugin.ts: the
 * header only, `Bearer` in any case, then spaces or tabs, then the token.
 */
export function bearerToken(request: Request): string | undefined {
  const raw = request.headers.get("authorization");
  if (raw === null) return undefined;
  const header = raw.trim();
  if (header.length < 8 || !isBearerScheme(header, 0)) return undefined;
  const separator = header.charCodeAt(6);
  if (separator !== 0x20 && separator !== 0x09) return undefined;
  const token = header.slice(7).trim();
  return token === "" ? undefined : token;
}

/** Puts the caller's user id on the request's access-log line. */
export function noteUser(request: Request, userId: number): void {
  if (BARE) return;
  const note = notes.get(request);
  if (note) note.userId = userId;
}

export function unauthorized(user: number): Response {
  return user === NO_TOKEN ? noToken() : invalidToken();
}

// ---------------------------------------------------------------------------------------------
// Query string: `limit`, as Elysia reads it (keys and values percent-decoded, the last one wins)

function decodeComponent(text: string): string | undefined {
  if (!text.includes("%") && !text.includes("+")) return text;
  try {
    return decodeURIComponent(text.replaceAll("+", " "));
  } catch {
    return undefined;
  }
}

function limitValue(text: string | undefined): number {
  if (text === undefined) return BAD_LIMIT;
  const length = text.length;
  if (length === 0 || length > 10) return BAD_LIMIT;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return BAD_LIMIT;
  }
  const value = Number(text);
  return value > INT32_MAX ? BAD_LIMIT : value;
}

/** NO_LIMIT when the query has no `limit`, BAD_LIMIT when it is not 0..2147483647, else the value. */
export function parseLimit(url: string, queryStart: number): number {
  if (queryStart < 0) return NO_LIMIT;
  let limit = NO_LIMIT;
  const end = url.length;
  let start = queryStart + 1;
  while (start < end) {
    let next = url.indexOf("&", start);
    if (next < 0) next = end;
    let equals = url.indexOf("=", start);
    if (equals < 0 || equals > next) equals = next;
    const isLimit =
      equals - start === 5
        ? url.startsWith("limit", start)
        : equals > start && decodeComponent(url.slice(start, equals)) === "limit";
    if (isLimit) limit = limitValue(equals === next ? "" : decodeComponent(url.slice(equals + 1, next)));
    start = next + 1;
  }
  return limit;
}

// ---------------------------------------------------------------------------------------------
// Body

const MAX_IN_FLIGHT = 1024;
let inFlight = 0;

/** Bodies being read: past MAX_IN_FLIGHT a new request is refused (see router in serve.ts). */
export const atCapacityNow = () => inFlight >= MAX_IN_FLIGHT;

/** The POST /plants body as a NewPlant, or the response refusing it. */
export async function readNewPlant(request: Request, declaredLength: string | null): Promise<NewPlant | Response> {
  let bytes: Uint8Array | BodyError;
  inFlight++;
  try {
    bytes = await readBody(request, declaredLength);
  } finally {
    inFlight--;
  }
  if (bytes instanceof BodyError) return bodyError(bytes);
  const plant = parseNewPlant(bytes, request.headers.get("content-type"));
  return plant instanceof BodyError ? bodyError(plant) : plant;
}
