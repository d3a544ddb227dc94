import { Elysia } from "elysia";
import { clientAddress, type TrustedProxies } from "../core/client-address";
import type { RateAnswer, RateLimiter } from "../core/rate-limit";
import type { RequestLimiter, TokenStore } from "../core/stores";
import type { AuthenticatedUser } from "../core/tokens";
import { HttpError } from "../http/errors";
import type { RequestNote, RequestNotes } from "../ops/request-id";

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

export interface AuthLimits {
  /** Requests per token (shared by every instance on PostgreSQL). */
  perToken: RequestLimiter;
  /** Failed authentications per client address, per instance. */
  failuresPerClient: RateLimiter;
  /** The reverse proxies whose X-Forwarded-For names that client (TRUST_PROXY). */
  trustedProxies: TrustedProxies;
}

function tooMany(retryAfter: number, message: string): HttpError {
  return new HttpError(429, `${message}; retry in ${retryAfter} s.`, { "retry-after": String(retryAfter) });
}

/**
 * The token's budget as draft-ietf-httpapi-ratelimit-headers puts it: on every answer to an
 * authenticated request (errors included), so a client can pace itself before a 429.
 */
export function rateLimitHeaders({ limit, remaining, resetSeconds }: RateAnswer): Record<string, string> {
  return {
    "ratelimit-policy": `"per-token";q=${limit};w=60`,
    ratelimit: `"per-token";r=${remaining};t=${resetSeconds}`,
  };
}

/**
 * The user behind the request's bearer token, decided from the headers alone. Only failures
 * are counted against the client's address, and only failures are refused for it: a spent
 * address slows down guessing, never a caller with a valid token (behind a proxy many clients
 * may share one address). A found user goes ahead unless their token's budget is spent.
 * `note` gives the peer's address and is told the user, or the client a failure was counted for.
 */
async function authenticateRequest(
  tokens: TokenStore,
  limits: AuthLimits,
  request: Request,
  note: RequestNote | undefined,
  headers: Record<string, unknown>,
): Promise<AuthenticatedUser> {
  const token = bearerToken(request.headers.get("authorization"));
  const user = token === undefined ? undefined : await tokens.authenticate(token);
  if (!user) {
    const client = clientAddress(note?.peer(), request.headers.get("x-forwarded-for"), limits.trustedProxies);
    if (note) note.client = client;
    const failures = limits.failuresPerClient.take(client ?? "unknown");
    if (failures?.refused) throw tooMany(failures.resetSeconds, "Too many failed authentications from your address");
    throw unauthorized(token !== undefined);
  }
  const budget = await limits.perToken.take(user.tokenId);
  // Into the response's own headers, which Elysia puts on error answers too.
  if (budget) Object.assign(headers, rateLimitHeaders(budget));
  if (budget?.refused) throw tooMany(budget.resetSeconds, "Too many requests with this token");
  if (note) note.userId = user.id;
  return user;
}

/**
 * Every route of the plugin that uses this gets a typed `user`. A `derive` (not a `resolve`
 * macro) because it runs before the body is read (see jsonBody): a caller without a valid
 * token gets 401 at once, without its body being read, and never feedback on it.
 */
export function bearerAuth(tokens: TokenStore, limits: AuthLimits, notes: RequestNotes) {
  return new Elysia().derive({ as: "scoped" }, async ({ request, set }) => {
    // The note exists only when the request is observed (the access log names user or client).
    const user = await authenticateRequest(tokens, limits, request, notes.get(request), set.headers);
    return { user };
  });
}
