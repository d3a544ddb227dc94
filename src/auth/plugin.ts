import { Elysia } from "elysia";
import { clientAddress, type TrustedProxies } from "../core/client-address";
import type { RateAnswer, RateLimiter } from "../core/rate-limit";
import { andThen, type HotRead, type RequestLimiter, type TokenStore } from "../core/stores";
import { type AuthenticatedUser, type Scope, scopeBit } from "../core/tokens";
import { HttpError } from "../http/errors";
import type { BodyLimits } from "../http/json-body";
import { type RouteLike, scopeOfRoute } from "../http/routes-table";
import type { RequestNote, RequestNotes } from "../ops/request-id";

const BEARER = /^Bearer(?:[ \t]+(.*))?$/is;

/** Only the header is read: RFC 6750's query string and body forms end up in logs and caches. */
function bearerToken(header: string | null): string | undefined {
  if (header === null) return undefined;
  return BEARER.exec(header.trim())?.[1]?.trim() || undefined;
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
  perToken: RequestLimiter;
  /** The token lookup and `perToken` answer at once (on SQLite). */
  atOnce: boolean;
  /** Failed authentications per client address, per instance. */
  failuresPerClient: RateLimiter;
  trustedProxies: TrustedProxies;
  /** The app's routes, each declaring its scope (the `scope` route option); filled in once they exist. */
  routeTable: { routes: readonly RouteLike[] };
}

/** What a feature's authenticated routes are given besides their own store. */
export interface AuthDeps {
  tokens: TokenStore;
  limits: AuthLimits;
  body: BodyLimits;
  notes: RequestNotes;
}

const expired = (expiresAt: number) =>
  new HttpError(401, `The bearer token expired at ${new Date(expiresAt).toISOString()}; make a new one.`, {
    "www-authenticate": 'Bearer error="invalid_token"',
  });

/** RFC 6750 §3.1. */
const insufficientScope = (scope: Scope) =>
  new HttpError(403, `This token lacks the scope "${scope}", which this request needs.`, {
    "www-authenticate": `Bearer error="insufficient_scope", scope="${scope}"`,
  });

function tooMany(retryAfter: number, message: string): HttpError {
  return new HttpError(429, `${message}; retry in ${retryAfter} s.`, { "retry-after": String(retryAfter) });
}

/** draft-ietf-httpapi-ratelimit-headers, on every authenticated answer, so a client can pace itself. */
function setRateLimitHeaders(headers: Record<string, unknown>, { limit, remaining, resetSeconds }: RateAnswer) {
  headers["ratelimit-policy"] = `"per-token";q=${limit};w=60`;
  headers.ratelimit = `"per-token";r=${remaining};t=${resetSeconds}`;
}

/**
 * Decided from the headers alone. Only failures are counted against (and refused for) the client's
 * address: it slows guessing, never a valid token's caller (behind a proxy many share an address).
 */
function authenticateRequest(
  tokens: TokenStore,
  limits: AuthLimits,
  request: Request,
  note: RequestNote | undefined,
  headers: Record<string, unknown>,
  route: string,
): HotRead<AuthenticatedUser> {
  const token = bearerToken(request.headers.get("authorization"));
  return andThen(token === undefined ? undefined : tokens.authenticate(token), (user) => {
    if (!user || user.expired) {
      const client = clientAddress(note?.peer(), request.headers.get("x-forwarded-for"), limits.trustedProxies);
      if (note) note.client = client;
      const failures = limits.failuresPerClient.take(client ?? "unknown");
      if (failures?.refused) throw tooMany(failures.resetSeconds, "Too many failed authentications from your address");
      throw user ? expired(user.expiresAt as number) : unauthorized(token !== undefined);
    }
    return andThen(limits.perToken.take(user.tokenId), (budget) => {
      // Into the response's own headers, which Elysia puts on error answers too.
      if (budget) setRateLimitHeaders(headers, budget);
      if (budget?.refused) throw tooMany(budget.resetSeconds, "Too many requests with this token");
      if (note) note.userId = user.id;
      const scope = scopeOfRoute(limits.routeTable.routes, request.method, route);
      if ((user.scopes & scopeBit(scope)) === 0) throw insufficientScope(scope);
      return user;
    });
  });
}

/** A derive, so a 401 reads no body (jsonBody); synchronous where stores answer at once (Elysia reads the source).
 * Each hook names the context fields it reads, so Elysia prepares only those. */
export function bearerAuth({ tokens, limits, notes }: Pick<AuthDeps, "tokens" | "limits" | "notes">) {
  // Each route names its scope with the route: `{ scope: "plants:read" }`, kept in its OpenAPI security.
  const auth = new Elysia().macro({
    scope: (scope: Scope) => ({ detail: { security: [{ bearerAuth: [scope] }] } }),
  });
  if (!limits.atOnce) {
    return auth.derive({ as: "scoped" }, async ({ request, set, route }) => ({
      user: await authenticateRequest(tokens, limits, request, notes.get(request), set.headers, route),
    }));
  }
  return auth.derive({ as: "scoped" }, ({ request, set, route }) => {
    const user = authenticateRequest(tokens, limits, request, notes.get(request), set.headers, route);
    if (user instanceof Promise) throw new Error("the token store answered with a promise: limits.atOnce is wrong");
    return { user };
  });
}
