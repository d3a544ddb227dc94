import { within } from "../core/timers";
import { HttpError } from "./errors";

const JSON_MEDIA_TYPE = /^application\/(?:[\w.+-]+\+)?json$/;
const NUMBER_SOURCE = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The exact integer a JSON number denotes (`7`, `7.0`, `7e0`); a fraction is undefined, 21+ digits Infinity. */
function exactInteger(source: string): bigint | number | undefined {
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

/** A plain integer literal that JSON.parse reads exactly: the common case, decided without parsing. */
const SHORT_INTEGER = /^-?[0-9]{1,15}$/;

/**
 * JSON.parse keeping every number exact: an integer past 2^53 becomes a bigint read from its source
 * text, and a fraction JSON.parse would round to an integer (`1e-400`) NaN, which no schema accepts.
 */
export function parseJsonExact(text: string): unknown {
  return JSON.parse(text, (_key, value, context?: { source?: string }) => {
    const source = context?.source;
    if (typeof value !== "number" || source === undefined || SHORT_INTEGER.test(source)) return value;
    const exact = exactInteger(source);
    if (typeof exact === "bigint") return Number.isSafeInteger(value) ? value : exact;
    return exact === undefined && Number.isInteger(value) ? Number.NaN : value;
  });
}

const tooLarge = (limitBytes: number) => new HttpError(413, `The request body must be at most ${limitBytes} bytes.`);

/** The rest of the body may still be on its way: the connection cannot be reused. */
const bodyTimedOut = (timeoutMs: number) =>
  new HttpError(408, `body: did not arrive within ${timeoutMs / 1000} s; send the whole body promptly.`, {
    connection: "close",
  });

export interface BodyLimits {
  limitBytes: number;
  timeoutMs: number;
}

function declaredTooLarge(request: Request, limitBytes: number): boolean {
  const length = request.headers.get("content-length");
  return length !== null && /^[0-9]+$/.test(length) && Number(length) > limitBytes;
}

/** The body's bytes, refusing more than the limit; a chunked body is cut short as it grows. */
async function collect(request: Request, limitBytes: number): Promise<Uint8Array> {
  if (request.headers.has("content-length") || request.body === null) {
    const bytes = new Uint8Array(await request.arrayBuffer());
    if (bytes.byteLength > limitBytes) throw tooLarge(limitBytes);
    return bytes;
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of request.body) {
    size += chunk.byteLength;
    if (size > limitBytes) throw tooLarge(limitBytes);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

/** A client that stops sending gets a 408 rather than holding its request open until the idle timeout. */
async function readBody(request: Request, { limitBytes, timeoutMs }: BodyLimits): Promise<Uint8Array> {
  if (declaredTooLarge(request, limitBytes)) throw tooLarge(limitBytes);
  if (request.body === null) return new Uint8Array(0);
  try {
    return await within(collect(request, limitBytes), timeoutMs, () => bodyTimedOut(timeoutMs));
  } catch (error) {
    if (error instanceof HttpError) throw error;
    // The client went away mid-body: it will not see this answer, but it is its failure, not ours.
    throw new HttpError(400, "body: the connection ended before the whole body arrived");
  }
}

async function parseJsonBody(request: Request, limits: BodyLimits): Promise<unknown> {
  const bytes = await readBody(request, limits);
  if (bytes.byteLength === 0) throw new HttpError(400, "body: a JSON object is required");
  const mediaType = request.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase() ?? "";
  if (!JSON_MEDIA_TYPE.test(mediaType)) throw new HttpError(415, "Content-Type must be application/json.");
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new HttpError(400, "body: must be UTF-8 encoded JSON");
  }
  try {
    return parseJsonExact(text);
  } catch {
    throw new HttpError(400, "body: must be a valid JSON document");
  }
}

/** Stands in for the body until authentication has passed: nothing has been read yet. */
const UNREAD = Symbol("unread body");

/** Hooks for a JSON object body, read only after auth: `parse` reads nothing, `transform` reads it. Arrays are refused
 * here, as validation sees them normalised into objects; the trailing "json" only names the media type for OpenAPI. */
export function jsonBody(limits: BodyLimits) {
  return {
    parse: [() => UNREAD, "json" as const],
    transform: async (context: { body: unknown; request: Request }) => {
      const body = await parseJsonBody(context.request, limits);
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        throw new HttpError(400, "body: must be a JSON object");
      }
      context.body = body;
    },
  };
}
