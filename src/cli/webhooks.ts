import type { RedeliverOutcome } from "../core/stores";
import { POLL_MS } from "../webhooks/rules";
import type { Command } from "./command";
import { CommandError, withStores } from "./database";
import { iso, PROGRAM, table } from "./format";

/** Endpoint ids stop at the PostgreSQL identity's MAXVALUE (int4): past it a number names no endpoint. */
const INT32_MAX = 2_147_483_647;
const ENDPOINT_ID_RULE = `endpoint id must be a positive integer such as 3, at most ${INT32_MAX}`;
const isEndpointId = (value: string) => /^[1-9][0-9]{0,9}$/.test(value) && Number(value) <= INT32_MAX;
const DELIVERY_ID_RULE = "delivery id must be msg_ followed by 32 lowercase hex digits, as webhook failed shows it";
const isDeliveryId = (value: string) => /^msg_[0-9a-f]{32}$/.test(value);

const oneLine = (text: string | null) => (text === null ? "-" : text.replace(/\s+/g, " ").trim() || "-");

async function listFailed(endpointId: string): Promise<number> {
  const failed = await withStores(({ webhooks }) => webhooks.failedDeliveries(Number(endpointId)));
  if (failed === undefined) throw new CommandError(`no webhook endpoint with id ${endpointId}`);
  if (failed.length === 0) {
    console.log(`Endpoint ${endpointId} has no failed deliveries.`);
    return 0;
  }
  const cells = failed.map((delivery) => [
    delivery.id,
    String(delivery.attempts),
    delivery.lastStatus === null ? "none" : String(delivery.lastStatus),
    iso(delivery.createdAt),
    oneLine(delivery.lastError),
  ]);
  console.log(table([["ID", "ATTEMPTS", "LAST STATUS", "CREATED", "LAST ERROR"], ...cells]));
  const count = failed.length === 1 ? "1 failed delivery" : `${failed.length} failed deliveries`;
  console.log(`${count}; send one again with: ${PROGRAM} webhook redeliver <delivery-id>`);
  return 0;
}

const NOT_QUEUED: Record<Exclude<RedeliverOutcome, "queued">, (id: string) => string> = {
  "not-found": (id) => `no delivery with id ${id}`,
  "not-failed": (id) => `delivery ${id} has not failed (it is pending or delivered); only a failed one is redelivered`,
  disabled: (id) =>
    `delivery ${id} was not queued: its endpoint is disabled (it answered 410 Gone); its owner must register the URL again (POST /webhooks)`,
};

async function redeliver(deliveryId: string): Promise<number> {
  const outcome = await withStores(({ webhooks }) => webhooks.redeliver(deliveryId));
  if (outcome !== "queued") throw new CommandError(NOT_QUEUED[outcome](deliveryId));
  console.log(
    `Delivery ${deliveryId} is due again: a running server sends it within ${POLL_MS / 1000} s, with the same webhook-id.`,
  );
  return 0;
}

export const WEBHOOK_COMMANDS: Record<string, Command> = {
  "webhook failed": {
    synopsis: "webhook failed <endpoint-id>",
    summary: "list a webhook endpoint's failed deliveries",
    details: [
      "Lists the endpoint's failed deliveries, oldest first, with their attempts and when each was created.",
      "LAST STATUS is the last answer's HTTP status (none when no answer came); LAST ERROR says why, when it can.",
      "<endpoint-id> is the endpoint's id as GET /webhooks shows it.",
    ],
    operand: {
      missing: "webhook failed needs an endpoint id (as GET /webhooks shows it)",
      problem: (id) => (isEndpointId(id) ? undefined : ENDPOINT_ID_RULE),
    },
    run: (_, id) => listFailed(id),
  },
  "webhook redeliver": {
    synopsis: "webhook redeliver <delivery-id>",
    summary: "send a failed webhook delivery again",
    details: [
      `Makes a failed delivery (its id as webhook failed shows it) due now: a running server sends it within ${POLL_MS / 1000} s.`,
      "It is sent with the same webhook-id, and the attempt shows in the endpoint's delivery log.",
      "A delivery whose endpoint was disabled by a 410 is not sent: its owner must register the URL again.",
    ],
    operand: {
      missing: "webhook redeliver needs a delivery id (see webhook failed)",
      problem: (id) => (isDeliveryId(id) ? undefined : DELIVERY_ID_RULE),
    },
    run: (_, id) => redeliver(id),
  },
};
