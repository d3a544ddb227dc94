import { t } from "elysia";
import { EXPIRES_IN_DAYS_MAX, SCOPES, TOKEN_NAME_MAX } from "../core/tokens";
import { BoundedInt, DateTime, Int32Query, Integer, Text, withOwnMessage } from "../http/types";

const orNull = (description: string) => t.Union([DateTime(description), t.Null()], { description });
const scopeLiterals = SCOPES.map((scope) => t.Literal(scope));
const scopes = (description: string) =>
  t.Array(t.Union(scopeLiterals, { description: "A scope" }), { minItems: 1, uniqueItems: true, description });

const SCOPES_TEXT =
  "`plants:read` (list, get and follow plants), `plants:write` (create, replace, change and delete them), `webhooks` (every /webhooks operation), `tokens` (every /tokens operation)";

/** What both answers say of a token. */
const listed = {
  id: Integer("The token's id"),
  name: t.String(),
  scopes: scopes("What it may do"),
  createdAt: DateTime("When it was made, ISO 8601 in UTC"),
  expiresAt: orNull("When it expires; null: never"),
};

export const tokenModels = {
  NewToken: withOwnMessage(
    t.Object({
      name: Text({ minLength: 1, maxLength: TOKEN_NAME_MAX, description: "What the token is for, to tell it apart" }),
      scopes: scopes(`What it may do, each once, all among the calling token's: ${SCOPES_TEXT}`),
      expiresInDays: t.Optional(
        BoundedInt({
          minimum: 1,
          maximum: EXPIRES_IN_DAYS_MAX,
          description:
            "Days until it expires; not past the calling token's expiry. Without it, it expires with the calling token (never, if that one never does)",
        }),
      ),
    }),
  ),
  CreatedToken: t.Object({
    ...listed,
    token: t.String({
      description: "The secret (pst_…): send it as `Authorization: Bearer <token>`. Shown only here.",
    }),
  }),
  Token: t.Object({
    ...listed,
    lastUsedAt: orNull("When it was last used (to the minute); null: never"),
    revokedAt: orNull("When it was revoked; null: it is not"),
    current: t.Boolean({ description: "True for the token this request was made with" }),
  }),
};

export const tokenIdParams = t.Object({
  id: Int32Query({ description: "The id of one of your tokens", minimum: 1, examples: [1] }),
});
