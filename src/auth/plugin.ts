import { Elysia } from "elysia";
import { HttpError } from "../http/errors";
import type { RateLimiter } from "../http/rate-limit";
import type { RequestNotes } from "../ops/request-id";
import type { AuthenticatedUser, TokenStore } from "./tokens";

const BEARER = /^Bearer(?:[ \t]+(.*))?$/is;

/**
 * The token from an Authorization header, or undefined when the request carries none:
 * no header, another scheme, or an empty token. Only the header is read (RFC 6750 also
 * allows the query string and the body, which end up in logs and caches).
 */
export function bearerToken(header: string | null): string | undefined {
  if (header === null) return undefined;
  const token = BEARER.exec(header.trim())?.[1]?.trim();
  return token ? token : undefined;
}

function unauthorized(tokenGiven: boolean): HttpError {
  return tokenGiven
    ? new HttpError(401, "The bearer token is not valid: it is unknown or has been revoked.", {
        "www-authenticate": 'Bearer error="invalid_token"',
      })
    : new HttpError(401, "Authentication required: send the header Authorization: Bearer <token>.", {
        "www-authenticate": "Bearer",
      });
}

export function authenticateRequest(tokens: TokenStore, limiter: RateLimiter, request: Request): AuthenticatedUser {
  const token = bearerToken(request.headers.get("authorization"));
  if (token === undefined) throw unauthorized(false);
  const user = tokens.authenticate(token);
  if (!user) throw unauthorized(true);
  const retryAfter = limiter.take(user.tokenId);
  if (retryAfter !== undefined) {
    throw new HttpError(429, `Too many requests with this token; retry in ${retryAfter} s.`, {
      "retry-after": String(retryAfter),
    });
  }
  return user;
}

/**
 * Every route of the plugin that uses this gets a typed `user`. A `derive` (not a `resolve`
 * macro) because it runs before body validation: a caller without a valid token gets 401,
 * never feedback on the body it sent.
 */
export function bearerAuth(tokens: TokenStore, limiter: RateLimiter, notes: RequestNotes) {
  return new Elysia().derive({ as: "scoped" }, ({ request }) => {
    const user = authenticateRequest(tokens, limiter, request);
    const note = notes.get(request);
    // The access log names the user; the note exists only when the request is observed.
    if (note) note.userId = user.id;
    return { user };
  });
}
