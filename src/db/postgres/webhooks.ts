import type { SQL } from "bun";
import type { ClaimedDelivery, DeliveryListing, WebhookStore } from "../../core/stores";
import { attemptParams, busyJson, type CursorRow, cursorOf, type EndpointRow, endpointOf } from "../../core/webhooks";
import { countOf } from "./client";
import { WEBHOOK_SQL } from "./webhook-queries";

/** The advisory lock's key space ("wh") for the per-owner lock that keeps the endpoint cap across instances. */
const REGISTER_LOCK_SPACE = 0x7768;

/** `settle` stamps the changes still in the inbox, so a new endpoint's cursor is past every change made before it. */
export function createPostgresWebhookStore(
  client: SQL,
  clock: () => number,
  settle: () => Promise<void>,
): WebhookStore {
  return {
    async register(ownerId, url, secret, max, events) {
      await settle();
      return client.begin(async (tx) => {
        await tx.unsafe(WEBHOOK_SQL.registerLock, [REGISTER_LOCK_SPACE, ownerId]);
        if ((await countOf(tx, WEBHOOK_SQL.countOwn, [ownerId])) >= max) return undefined;
        const params = [ownerId, url, secret, new Date(clock()), events === undefined ? null : JSON.stringify(events)];
        const [row] = (await tx.unsafe(WEBHOOK_SQL.register, params)) as [EndpointRow];
        return { ...endpointOf(row), secret };
      });
    },
    list: async (ownerId) => ((await client.unsafe(WEBHOOK_SQL.listOwn, [ownerId])) as EndpointRow[]).map(endpointOf),
    remove: async (ownerId, id) => (await client.unsafe(WEBHOOK_SQL.remove, [ownerId, id])).length > 0,
    async deliveries(ownerId, webhookId, after, count) {
      type PageRow = DeliveryListing & { found: number; started: boolean };
      const rows = (await client.unsafe(WEBHOOK_SQL.page, [ownerId, webhookId, after ?? null, count + 1])) as PageRow[];
      const first = rows[0];
      if (!first || first.found === 0) return "no-endpoint";
      if (!first.started) return "unknown-after";
      const deliveries = rows.filter((row) => row.id !== null).map(({ found, started, ...delivery }) => delivery);
      const more = deliveries.length > count;
      if (more) deliveries.pop();
      return { deliveries, more };
    },

    async behind({ count, circuitFailures, ownerId }) {
      const rows = (await (ownerId === undefined
        ? client.unsafe(WEBHOOK_SQL.behind, [circuitFailures, count])
        : client.unsafe(WEBHOOK_SQL.behindOwner, [ownerId]))) as CursorRow[];
      return rows.map(cursorOf);
    },
    fanOut: async (endpointId, from, to, deliveries) =>
      (await countOf(client, WEBHOOK_SQL.fanOut, [endpointId, from, to, JSON.stringify(deliveries)])) > 0,

    async claimDue({ count, leaseMs, perEndpoint, busy, held, circuit }) {
      const params = [circuit.failures, circuit.restMs, leaseMs, count, perEndpoint, ...[busy, held].map(busyJson)];
      const rows = (await client.unsafe(WEBHOOK_SQL.claim, params)) as Array<ClaimedDelivery & { seq: string }>;
      // int8 as decimal text, far below 2^53.
      return rows.map((row) => ({ ...row, seq: Number(row.seq) }));
    },

    async release(deliverySeqs) {
      const seqs = deliverySeqs.join(",");
      await client.begin(async (tx) => {
        await tx.unsafe(WEBHOOK_SQL.lockEndpointsOf, [seqs]);
        await tx.unsafe(WEBHOOK_SQL.release, [seqs]);
      });
    },

    async recordAttempt(a) {
      await client.unsafe(WEBHOOK_SQL.recordAttempt, attemptParams(a, new Date(a.at)));
    },
    pendingCount: () => countOf(client, WEBHOOK_SQL.pending),
    pruneFinished: (before, count) => countOf(client, WEBHOOK_SQL.pruneFinished, [new Date(before), count]),
    async failedDeliveries(webhookId) {
      const [exists] = await client.unsafe(WEBHOOK_SQL.endpointExists, [webhookId]);
      if (!exists) return undefined;
      const rows = await client.unsafe(WEBHOOK_SQL.failed, [webhookId]);
      return [...rows] as Array<DeliveryListing & { lastError: string | null }>;
    },

    async redeliver(deliveryId) {
      type Outcome = { disabled: boolean; queued: number };
      const [row]: Outcome[] = await client.unsafe(WEBHOOK_SQL.redeliver, [deliveryId]);
      if (!row) return "not-found";
      if (row.queued > 0) return "queued";
      return row.disabled ? "disabled" : "not-failed";
    },
  };
}
