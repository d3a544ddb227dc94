import { HttpError } from "./errors";

const JSON_MEDIA_TYPE = /^application\/(?:[\w.+-]+\+)?json$/;
const NUMBER_SOURCE = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;
const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The exact integer a JSON number literal denotes (`7`, `7.0` and `7e0` alike), or undefined
 * for a fraction. Values past 20 significant digits are never int64, so they come back as a
 * number out of range rather than costing a huge BigInt.
 */
export function exactInteger(source: string): bigint | number | undefined {
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

/** JSON.parse that keeps every `id` number exact, using the literal's source text. */
export function parseJsonKeepingIds(text: string): unknown {
  return JSON.parse(text, (key, value, context?: { source?: string }) => {
    if (key !== "id" || typeof value !== "number" || context?.source === undefined) return value;
    return exactInteger(context.source) ?? value;
  });
}

export const tooLarge = (limitBytes: number) =>
  new HttpError(413, `The request body must be at most ${limitBytes} bytes.`);

/**
 * The body's bytes, refusing more than the limit. A declared length was already checked
 * (declaredBodyTooLarge), so only a chunked body is read piece by piece and cut short.
 */
async function readBody(request: Request, limitBytes: number): Promise<Uint8Array> {
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

/** Reads a JSON request body for a route that requires one. */
export async function parseJsonBody(request: Request, limitBytes: number): Promise<unknown> {
  const bytes = await readBody(request, limitBytes);
  if (bytes.byteLength === 0) throw new HttpError(400, "body: a JSON object is required");
  const mediaType = request.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase() ?? "";
  if (!JSON_MEDIA_TYPE.test(mediaType)) {
    throw new HttpError(415, "Content-Type must be application/json.");
  }
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new HttpError(400, "body: must be UTF-8 encoded JSON");
  }
  try {
    return parseJsonKeepingIds(text);
  } catch {
    throw new HttpError(400, "body: must be a valid JSON document");
  }
}

/** A body that could not be read; it is raised after authentication so a 401 comes first. */
export class RejectedBody {
  constructor(readonly error: HttpError) {}
}

/**
 * Route hooks for a JSON object body: Elysia's `parse` runs before authentication, so a
 * failure is held as a RejectedBody and thrown by `transform`, which runs after it. The
 * object check is made here too because Elysia's validation sees a normalised value, in
 * which an array or a number already looks like an object. The trailing "json" never runs
 * (the reader always answers); it tells the OpenAPI generator the media type.
 */
export function jsonBody(limitBytes: number) {
  return {
    parse: [
      async ({ request }: { request: Request }) => {
        try {
          return await parseJsonBody(request, limitBytes);
        } catch (error) {
          if (error instanceof HttpError) return new RejectedBody(error);
          throw error;
        }
      },
      "json" as const,
    ],
    transform: ({ body }: { body: unknown }) => {
      if (body instanceof RejectedBody) throw body.error;
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        throw new HttpError(400, "body: must be a JSON object");
      }
    },
  };
}

/** Answers a declared over-size body before any of it is read. */
export function declaredBodyTooLarge(request: Request, limitBytes: number): boolean {
  const length = request.headers.get("content-length");
  return length !== null && /^[0-9]+$/.test(length) && Number(length) > limitBytes;
}
