import type { Database } from "bun:sqlite";
import type {
  ClaimedDelivery,
  DeliveryListing,
  DeliveryStatus,
  RedeliverOutcome,
  WebhookEndpoint,
  WebhookStore,
} from "../../core/stores";
import { ENDPOINT_COLUMNS } from "./endpoint-columns";
import type { Writer } from "./writer";

interface EndpointRow {
  id: number;
  url: string;
  createdAt: number;
  disabledAt: number | null;
}

interface DeliveryRow {
  id: string;
  status: DeliveryStatus;
  attempts: number;
  lastStatus: number | null;
  createdAt: number;
  nextAttemptAt: number | null;
}

const DELIVERY_COLUMNS =
  "id, status, attempts, last_status AS lastStatus, created_at AS createdAt, next_attempt_at AS nextAttemptAt";

const toEndpoint = (row: EndpointRow): WebhookEndpoint => ({
  id: row.id,
  url: row.url,
  createdAt: new Date(row.createdAt),
  disabled: row.disabledAt !== null,
});

const toDelivery = (row: DeliveryRow): DeliveryListing => ({
  id: row.id,
  status: row.status,
  attempts: row.attempts,
  lastStatus: row.lastStatus,
  createdAt: new Date(row.createdAt),
  nextAttemptAt: row.nextAttemptAt === null ? null : new Date(row.nextAttemptAt),
});

/**
 * Webhook endpoints and the outbox on SQLite. Every write is one statement through group
 * commit (the plant trigger and the attempt trigger in drizzle/sqlite/0003 do the rest);
 * the dispatcher's writes are bookkeeping, so they never take a client's place in the queue.
 * Reads answer synchronously.
 */
export function createSqliteWebhookStore(sqlite: Database, writes: Writer, clock: () => number): WebhookStore {
  const listOwn = sqlite.prepare<EndpointRow, [number]>(
    `SELECT ${ENDPOINT_COLUMNS} FROM webhooks WHERE owner_id = ? ORDER BY id`,
  );
  const ownEndpoint = sqlite.prepare<{ id: number }, [number, number]>(
    "SELECT id FROM webhooks WHERE owner_id = ? AND id = ?",
  );
  const seqOf = sqlite.prepare<{ seq: number }, [number, string]>(
    "SELECT seq FROM webhook_deliveries WHERE webhook_id = ? AND id = ?",
  );
  const page = sqlite.prepare<DeliveryRow, [number, number, number]>(
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
  );
  // Most polls find nothing due: a read answers that without a write.
  const anyDue = sqlite.prepare<{ due: number }, [number]>(
    "SELECT 1 AS due FROM webhook_deliveries WHERE next_attempt_at <= ? LIMIT 1",
  );
  const endpointSecret = sqlite.prepare<{ url: string; secret: string }, [number]>(
    "SELECT url, secret FROM webhooks WHERE id = ?",
  );
  const pending = sqlite.prepare<{ n: number }, []>(
    "SELECT count(*) AS n FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL",
  );
  const endpointExists = sqlite.prepare<{ id: number }, [number]>("SELECT id FROM webhooks WHERE id = ?");
  const failed = sqlite.prepare<DeliveryRow & { lastError: string | null }, [number]>(
    `SELECT ${DELIVERY_COLUMNS},
       (SELECT error FROM webhook_attempts a WHERE a.delivery_seq = d.seq ORDER BY attempt DESC LIMIT 1) AS lastError
     FROM webhook_deliveries d WHERE webhook_id = ? AND status = 'failed' ORDER BY seq`,
  );
  const deliveryState = sqlite.prepare<{ status: string; disabledAt: number | null }, [string]>(
    `SELECT d.status, w.disabled_at AS disabledAt FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
     WHERE d.id = ?`,
  );

  return {
    async register(ownerId, url, secret, max) {
      const row = await writes.run("registerWebhook", [ownerId, url, secret, clock(), max]);
      return row ? { ...toEndpoint(row), secret } : undefined;
    },

    list: (ownerId) => listOwn.all(ownerId).map(toEndpoint),

    async remove(ownerId, id) {
      return Boolean(await writes.run("removeWebhook", [ownerId, id]));
    },

    async deliveries(ownerId, webhookId, after, count) {
      if (!ownEndpoint.get(ownerId, webhookId)) return "no-endpoint";
      let afterSeq = 0;
      if (after !== undefined) {
        const found = seqOf.get(webhookId, after);
        if (!found) return "unknown-after";
        afterSeq = found.seq;
      }
      const rows = page.all(webhookId, afterSeq, count + 1);
      const more = rows.length > count;
      if (more) rows.pop();
      return { deliveries: rows.map(toDelivery), more };
    },

    async claimDue(count, leaseMs) {
      const now = clock();
      if (!anyDue.get(now)) return [];
      const rows = await writes.run("claimDeliveries", [now + leaseMs, now, count], { bookkeeping: true });
      const claimed: ClaimedDelivery[] = [];
      for (const row of rows) {
        const endpoint = endpointSecret.get(row.webhookId);
        if (endpoint) claimed.push({ ...row, ...endpoint });
      }
      return claimed;
    },

    async recordAttempt(a) {
      await writes.run(
        "recordAttempt",
        [
          a.deliverySeq,
          a.attempt,
          a.at,
          a.statusCode ?? null,
          Math.round(a.durationMs),
          a.error ?? null,
          a.outcome,
          a.retryInMs === undefined ? null : Math.round(a.retryInMs),
        ],
        { bookkeeping: true },
      );
    },

    pendingCount: async () => pending.get()?.n ?? 0,

    async failedDeliveries(webhookId) {
      if (!endpointExists.get(webhookId)) return undefined;
      return failed.all(webhookId).map((row) => ({ ...toDelivery(row), lastError: row.lastError }));
    },

    async redeliver(deliveryId): Promise<RedeliverOutcome> {
      if (await writes.run("redeliver", [clock(), deliveryId])) return "queued";
      const state = deliveryState.get(deliveryId);
      if (!state) return "not-found";
      return state.disabledAt !== null ? "disabled" : "not-failed";
    },
  };
}
