/*
 * The POST /plants body, checked the way src/http/json-body.ts and the NewPlant schema check
 * it, in the same order and with the same messages.
 */

export const BODY_LIMIT_BYTES = 64 * 1024;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

const JSON_MEDIA_TYPE = /^application\/(?:[\w.+-]+\+)?json$/;
const NUMBER_SOURCE = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;
const utf8 = new TextDecoder("utf-8", { fatal: true });

export const ID_RULE = `id: must be an integer between ${INT64_MIN} and ${INT64_MAX}`;
export const NAME_RULE = "name: must be a string of 1 to 256 characters";
export const TAG_RULE = "tag: must be a string of 0 to 256 characters";

/** Optional '-' then digits only: the common literal, for which the parsed number is exact when safe. */
function isPlainInteger(source: string): boolean {
  const length = source.length;
  let i = source.charCodeAt(0) === 45 ? 1 : 0;
  if (i === length) return false;
  for (; i < length; i++) {
    const c = source.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/**
 * The exact integer a JSON number literal denotes (`7`, `7.0` and `7e0` alike), undefined for a
 * fraction, +Infinity when it is certainly past int64. Same rules as the service's exactInteger.
 */
function exactInteger(value: number, source: string): bigint | number | undefined {
  // A plain literal that parsed to a safe integer was exact: past 2^53 - 1 it rounds to ≥ 2^53.
  if (Number.isSafeInteger(value) && isPlainInteger(source)) return BigInt(value);
  const match = NUMBER_SOURCE.exec(source);
  if (!match) return undefined;
  const [, sign, whole = "", fraction = "", exponentText = "0"] = match;
  let digits = (whole + fraction).replace(/^0+/, "");
  if (digits === "") return 0n;
  let exponent = Number(exponentText) - fraction.length;
  const trailingZeros = /0*$/.exec(digits)?.[0].length ?? 0;
  digits = digits.slice(0, digits.length - trailingZeros);
  exponent += trailingZeros;
  if (exponent < 0) return undefined;
  if (digits.length + exponent > 20) return Number.POSITIVE_INFINITY;
  const magnitude = BigInt(digits) * 10n ** BigInt(exponent);
  return sign === "-" ? -magnitude : magnitude;
}

/** JSON.parse reviver keeping every `id` number exact, from the literal's source text. */
function keepIdsExact(key: string, value: unknown, context?: { source?: string }): unknown {
  if (key !== "id" || typeof value !== "number") return value;
  const source = context?.source;
  if (source === undefined) return value;
  return exactInteger(value, source) ?? value;
}

/** A string of min..max code points, well formed (SQLite would silently change a lone surrogate). */
function isText(value: unknown, min: number, max: number): value is string {
  if (typeof value !== "string" || !value.isWellFormed()) return false;
  const length = value.length;
  // A string has at most .length and at least .length / 2 code points: count only when needed.
  if (length < min || length > 2 * max) return false;
  if (length <= max && min <= 1) return true;
  let count = 0;
  for (const _ of value) count++;
  return count >= min && count <= max;
}

export interface NewPlant {
  id: bigint;
  name: string;
  tag: string | null;
}

/** Status and message of a refused body. */
export class BodyError {
  constructor(
    readonly status: number,
    readonly message: string,
  ) {}
}

const NO_BODY = new BodyError(400, "body: a JSON object is required");
const NOT_JSON_TYPE = new BodyError(415, "Content-Type must be application/json.");
const NOT_UTF8 = new BodyError(400, "body: must be UTF-8 encoded JSON");
const NOT_JSON = new BodyError(400, "body: must be a valid JSON document");
const NOT_OBJECT = new BodyError(400, "body: must be a JSON object");
const BAD_ID = new BodyError(400, ID_RULE);
const BAD_NAME = new BodyError(400, NAME_RULE);
const BAD_TAG = new BodyError(400, TAG_RULE);
export const TOO_LARGE = new BodyError(413, `The request body must be at most ${BODY_LIMIT_BYTES} bytes.`);

function isJsonMediaType(contentType: string | null): boolean {
  if (contentType === "application/json") return true;
  if (contentType === null) return false;
  const mediaType = contentType.split(";")[0]?.trim().toLowerCase() ?? "";
  return JSON_MEDIA_TYPE.test(mediaType);
}

/**
 * The body's bytes, refusing more than the limit. A declared length was already checked by the
 * caller, so only a chunked body is read piece by piece and cut short.
 */
export async function readBody(request: Request, declaredLength: string | null): Promise<Uint8Array | BodyError> {
  const stream = request.body;
  if (declaredLength !== null || stream === null) {
    const bytes = await request.bytes();
    return bytes.byteLength > BODY_LIMIT_BYTES ? TOO_LARGE : bytes;
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += chunk.byteLength;
    if (size > BODY_LIMIT_BYTES) return TOO_LARGE;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

/** The NewPlant in a body already read, or why it is refused. */
export function parseNewPlant(bytes: Uint8Array, contentType: string | null): NewPlant | BodyError {
  if (bytes.byteLength === 0) return NO_BODY;
  if (!isJsonMediaType(contentType)) return NOT_JSON_TYPE;
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return NOT_UTF8;
  }
  let body: unknown;
  try {
    body = JSON.parse(text, keepIdsExact);
  } catch {
    return NOT_JSON;
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) return NOT_OBJECT;
  const { id, name, tag } = body as { id?: unknown; name?: unknown; tag?: unknown };
  if (typeof id !== "bigint" || id < INT64_MIN || id > INT64_MAX) return BAD_ID;
  if (!isText(name, 1, 256)) return BAD_NAME;
  if (tag === undefined) return { id, name, tag: null };
  if (!isText(tag, 0, 256)) return BAD_TAG;
  return { id, name, tag };
}

/** A path segment holding an int64 in decimal (after percent-decoding), else undefined. */
export function parseIdSegment(segment: string): bigint | undefined {
  let text = segment;
  if (text.includes("%")) {
    try {
      text = decodeURIComponent(text);
    } catch {
      return undefined;
    }
  }
  const length = text.length;
  let i = text.charCodeAt(0) === 45 ? 1 : 0;
  if (i === length || length - i > 20) return undefined;
  for (; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
  }
  const id = BigInt(text);
  return id < INT64_MIN || id > INT64_MAX ? undefined : id;
}
