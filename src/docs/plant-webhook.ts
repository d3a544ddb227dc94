const header = (name: string, description: string, example: string) => ({
  in: "header" as const,
  name,
  required: true,
  description,
  schema: { type: "string" as const },
  example,
});

const SIGNED =
  "Signed per Standard Webhooks: verify `webhook-signature` before trusting the body, and use `webhook-id` " +
  "to ignore a repeat. A 2xx within 10 s is delivered; anything else (a redirect included) is retried " +
  "after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h, honouring Retry-After; 410 disables the endpoint.";

const SIGNING_HEADERS = [
  header("webhook-id", "The delivery's id; the same on every retry", "msg_2b9c4d…"),
  header("webhook-timestamp", "Unix seconds when this attempt was made; refuse one far from your clock", "1614265330"),
  header(
    "webhook-signature",
    'v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>", keyed with the base64-decoded secret after "whsec_">',
    "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
  ),
];

const RECEIVED = {
  "200": {
    description:
      "What your receiver answers: any 2xx means delivered, 410 stops sending to this endpoint, anything else is retried.",
  },
};

/** What an endpoint is sent, as Swagger UI lists a route: its words say first that this service does not answer it. */
const received = (when: string, description: string, operationId: string, body: string, model: string) => ({
  post: {
    summary: `What your endpoint receives when ${when} (not a route of this service)`,
    description: `${description} ${SIGNED}`,
    operationId,
    tags: ["webhooks"],
    security: [],
    parameters: SIGNING_HEADERS,
    requestBody: {
      description: body,
      required: true,
      content: { "application/json": { schema: { $ref: `#/components/schemas/${model}` } } },
    },
    responses: RECEIVED,
  },
});

/** One change type's webhook, for an endpoint registered with it in `events`. */
const changeWebhook = (type: string, what: string, operationId: string) =>
  received(
    what,
    `Sent to each of your enabled endpoints registered with \`"events"\` including \`${type}\`, for each ${type} ` +
      "change in your log, in `seq` order, the body the change itself (`{seq, type, timestamp, data}`, as " +
      "`GET /plants/changes` shows it): the signature covers its type and `seq`.",
    operationId,
    `The ${type} change`,
    "Change",
  );

export const PLANT_WEBHOOK = {
  "/plant/webhook": received(
    "you create a plant",
    "**This is the request the Plant Store sends to YOUR receiver**, at the URL you registered with " +
      "`POST /webhooks` (without `events`); the service itself has no `/plant/webhook` route, so there is nothing to try here. " +
      "It is sent to each of your enabled endpoints for every plant you create (a 200 from `POST /plants`, " +
      "never a 409), with the NewPlant exactly as stored, its id an exact 64-bit integer.",
    "plantCreated",
    "The plant you created, as stored",
    "NewPlant",
  ),
  "plant.created": changeWebhook("plant.created", "you create a plant", "plantCreatedChange"),
  "plant.updated": changeWebhook("plant.updated", "one of your plants changes", "plantUpdatedChange"),
  "plant.deleted": changeWebhook("plant.deleted", "you delete a plant", "plantDeletedChange"),
};
