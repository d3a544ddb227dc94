import { t } from "elysia";
import { changeType } from "../changes/model";
import { DELIVERY_STATUSES } from "../core/webhooks";
import { DateTime, Int32Query, Integer, Text, withOwnMessage } from "../http/types";

const events = (description: string) =>
  t.Array(changeType("A change type"), { minItems: 1, uniqueItems: true, description });
const endpoint = { id: Integer("The endpoint's id"), url: t.String() };

export const webhookModels = {
  NewWebhook: withOwnMessage(
    t.Object({
      url: Text({
        minLength: 1,
        maxLength: 2048,
        description: "An absolute http or https URL without credentials, whose host resolves only to public addresses",
      }),
      events: t.Optional(
        events(
          "The changes to send, each as its change (`{seq, type, timestamp, data}`) signed; without it, only created plants, each as its NewPlant (the interface's `/plant/webhook`)",
        ),
      ),
    }),
  ),
  RegisteredWebhook: t.Object({
    ...endpoint,
    secret: t.String({
      description:
        "whsec_ followed by the base64 of 32 random bytes: the key of every delivery's webhook-signature. Shown only here.",
    }),
  }),
  Webhook: t.Object({
    ...endpoint,
    createdAt: DateTime("When it was registered, ISO 8601 in UTC"),
    disabled: t.Boolean({ description: "True once the endpoint answered 410 Gone: nothing more is sent to it" }),
    events: t.Optional(events("The change types it was registered for; absent: created plants, as NewPlant")),
  }),
  Delivery: t.Object({
    id: t.String({ description: "The delivery's webhook-id header (msg_…), the same on every attempt" }),
    type: changeType("The change it carries"),
    status: t.Union(DELIVERY_STATUSES.map((status) => t.Literal(status))),
    attempts: Integer("Attempts made so far"),
    lastStatus: t.Union([Integer(), t.Null()], {
      description: "The last attempt's HTTP status; null when none came",
    }),
    createdAt: DateTime("When the change was made"),
    nextAttemptAt: t.Union([DateTime("When it is tried next"), t.Null()], {
      description: "When it is tried next; null once delivered or failed",
    }),
  }),
};

export const webhookIdParams = t.Object({
  id: Int32Query({ description: "The id of one of your webhook endpoints", minimum: 1, examples: [1] }),
});

export const deliveriesQuery = t.Object({
  limit: t.Optional(
    Int32Query({
      description:
        "How many deliveries to return at most; all when absent. When more follow, the `Link` header names the next page.",
    }),
  ),
  after: t.Optional(
    Text({
      minLength: 1,
      maxLength: 64,
      description: "Only deliveries created after this one: a delivery id (the `Link` header gives it)",
    }),
  ),
});
