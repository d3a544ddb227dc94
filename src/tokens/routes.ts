import { Elysia } from "elysia";
import { type AuthDeps, bearerAuth } from "../auth/plugin";
import type { TokenListing } from "../core/stores";
import { type Clock, expiryAfterDays, MAX_TOKENS_PER_USER, scopeBits, scopeNames } from "../core/tokens";
import { HttpError } from "../http/errors";
import { jsonBody } from "../http/json-body";
import { BAD_PATH_ID, errorModels, modelResponse, routeErrors } from "../http/models";
import { tokenIdParams, tokenModels } from "./model";

const NO_SUCH_TOKEN = "You have no token with this id (another user's are not yours to see)";
const TOO_MANY = `You already have ${MAX_TOKENS_PER_USER} unrevoked tokens, the most allowed; revoke one first`;

export interface TokenRoutesDeps extends AuthDeps {
  clock: Clock;
}

const iso = (date: Date | null) => (date === null ? null : date.toISOString());

function entry({ id, name, scopes, createdAt, expiresAt }: TokenListing) {
  return { id, name, scopes: scopeNames(scopes), createdAt: createdAt.toISOString(), expiresAt: iso(expiresAt) };
}

/** Each user's own tokens: a token makes only tokens that can do no more, and live no longer, than itself. */
export function tokenRoutes(deps: TokenRoutesDeps) {
  const { tokens, body: bodyLimits, clock } = deps;
  return new Elysia({ prefix: "/tokens", tags: ["tokens"] })
    .use(bearerAuth(deps))
    .model({ ...tokenModels, ...errorModels })
    .post(
      "",
      async ({ body, user, set }) => {
        const scopes = scopeBits(body.scopes);
        const beyond = scopeNames(scopes & ~user.scopes);
        if (beyond.length > 0) {
          throw new HttpError(403, `scopes: this token does not have ${beyond.join(", ")}, so cannot give it`);
        }
        const expiresAt =
          body.expiresInDays === undefined ? user.expiresAt : expiryAfterDays(clock(), body.expiresInDays);
        if (user.expiresAt !== null && (expiresAt as number) > user.expiresAt) {
          throw new HttpError(403, "expiresInDays: the new token would outlive this one; ask for fewer days");
        }
        const created = await tokens.create(user.id, { name: body.name, scopes, expiresAt });
        if (created === "too-many") throw new HttpError(409, TOO_MANY);
        set.status = 201;
        return { ...entry(created), token: created.token };
      },
      {
        scope: "tokens",
        ...jsonBody(bodyLimits),
        body: "NewToken",
        detail: {
          summary: "Make a token",
          description:
            "A new token of yours, with some or all of this token's scopes and an expiry no later than its own. " +
            "The secret is in the answer only: store it.",
          operationId: "addToken",
          responses: {
            201: modelResponse("The token, with its secret", "CreatedToken"),
            ...routeErrors({
              400: "The body breaks a rule of NewToken (the message names the field): `name` not 1 to 100 characters, `scopes` not a non-empty array of distinct scopes, `expiresInDays` not an integer from 1 to 3650",
              403: "This token lacks the `tokens` scope, or one of the scopes asked for, or the new token would outlive it",
              409: TOO_MANY,
            }),
          },
        },
      },
    )
    .get(
      "",
      async ({ user }) =>
        (await tokens.list(user.id)).map((token) => ({
          ...entry(token),
          lastUsedAt: iso(token.lastUsedAt),
          revokedAt: iso(token.revokedAt),
          current: token.id === user.tokenId,
        })),
      {
        scope: "tokens",
        detail: {
          summary: "List your tokens",
          description: "Every token of yours, oldest first, revoked ones included; never a secret.",
          operationId: "listTokens",
          responses: { 200: modelResponse("Your tokens, oldest first", "Token", { array: true }) },
        },
      },
    )
    .delete(
      "/:id",
      async ({ params, user, set }) => {
        if ((await tokens.revoke(Number(params.id), user.id)) === "not-found") {
          throw new HttpError(404, "id: you have no token with this id");
        }
        set.status = 204;
      },
      {
        scope: "tokens",
        params: tokenIdParams,
        detail: {
          summary: "Revoke one of your tokens",
          description: "From the next request on, on every instance; this one included. Revoking twice is no error.",
          operationId: "revokeToken",
          responses: { 204: { description: "Revoked" }, ...routeErrors({ 400: BAD_PATH_ID, 404: NO_SUCH_TOKEN }) },
        },
      },
    );
}
