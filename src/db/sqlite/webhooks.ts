import type {
  ClaimedDelivery,
  DeliveryListing,
  DeliveryStatus,
  RedeliverOutcome,
  WebhookEndpoint,
  WebhookStore,
} from "../stores";
import type { AppDatabase } from "./client";
import type { GroupCommit } from "./group-commit";

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

const ENDPOINT_COLUMNS = "id, url, created_at AS createdAt, disabled_at AS disabledAt";
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
export function createSqliteWebhookStore(db: AppDatabase, writes: GroupCommit, clock: () => number): WebhookStore {
  const sqlite = db.$client;
  // The count and the insert are one statement: one writer at a time, so the cap holds.
  const insert = sqlite.prepare<EndpointRow, [number, string, string, number, number, number]>(
    `INSERT INTO webhooks (owner_id, url, secret, created_at)
     SELECT ?1, ?2, ?3, ?4 WHERE (SELECT count(*) FROM webhooks WHERE owner_id = ?5) < ?6
     RETURNING ${ENDPOINT_COLUMNS}`,
  );
  const listOwn = sqlite.prepare<EndpointRow, [number]>(
    `SELECT ${ENDPOINT_COLUMNS} FROM webhooks WHERE owner_id = ? ORDER BY id`,
  );
  const remove = sqlite.prepare<{ id: number }, [number, number]>(
    "DELETE FROM webhooks WHERE owner_id = ? AND id = ? RETURNING id",
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
  const claim = sqlite.prepare<
    { seq: number; id: string; webhookId: number; payload: string; attempts: number },
    [number, number, number]
  >(
    `UPDATE webhook_deliveries SET next_attempt_at = ?1
     WHERE seq IN (SELECT seq FROM webhook_deliveries WHERE next_attempt_at <= ?2 ORDER BY next_attempt_at LIMIT ?3)
     RETURNING seq, id, webhook_id AS webhookId, payload, attempts`,
  );
  // Most polls find nothing due: a read answers that without a write.
  const anyDue = sqlite.prepare<{ due: number }, [number]>(
    "SELECT 1 AS due FROM webhook_deliveries WHERE next_attempt_at <= ? LIMIT 1",
  );
  const endpointSecret = sqlite.prepare<{ url: string; secret: string }, [number]>(
    "SELECT url, secret FROM webhooks WHERE id = ?",
  );
  // A delivery gone with its endpoint records nothing (SELECT … WHERE EXISTS), and a second
  // record of one attempt is ignored (its key).
  const record = sqlite.prepare(
    `INSERT INTO webhook_attempts (delivery_seq, attempt, at, status_code, duration_ms, error, outcome, retry_in_ms)
     SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8 WHERE EXISTS (SELECT 1 FROM webhook_deliveries WHERE seq = ?1)
     ON CONFLICT DO NOTHING`,
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
  const redeliver = sqlite.prepare<{ status: string; disabled: number | null }, [number, string]>(
    `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?1
     WHERE id = ?2 AND status = 'failed'
       AND (SELECT disabled_at FROM webhooks WHERE webhooks.id = webhook_id) IS NULL
     RETURNING status`,
  );
  const deliveryState = sqlite.prepare<{ status: string; disabledAt: number | null }, [string]>(
    `SELECT d.status, w.disabled_at AS disabledAt FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
     WHERE d.id = ?`,
  );

  return {
    async register(ownerId, url, secret, max) {
      const row = await writes.run(() => insert.get(ownerId, url, secret, clock(), ownerId, max));
      return row ? { ...toEndpoint(row), secret } : undefined;
    },

    list: (ownerId) => listOwn.all(ownerId).map(toEndpoint),

    async remove(ownerId, id) {
      return (await writes.run(() => remove.get(ownerId, id))) !== null;
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
      const rows = await writes.run(() => claim.all(now + leaseMs, now, count), { bookkeeping: true });
      const claimed: ClaimedDelivery[] = [];
      for (const row of rows) {
        const endpoint = endpointSecret.get(row.webhookId);
        if (endpoint) claimed.push({ ...row, ...endpoint });
      }
      return claimed;
    },

    async recordAttempt(a) {
      await writes.run(
        () =>
          record.run(
            a.deliverySeq,
            a.attempt,
            a.at,
            a.statusCode ?? null,
            Math.round(a.durationMs),
            a.error ?? null,
            a.outcome,
            a.retryInMs === undefined ? null : Math.round(a.retryInMs),
          ),
        { bookkeeping: true },
      );
    },

    pendingCount: async () => pending.get()?.n ?? 0,

    async failedDeliveries(webhookId) {
      if (!endpointExists.get(webhookId)) return undefined;
      return failed.all(webhookId).map((row) => ({ ...toDelivery(row), lastError: row.lastError }));
    },

    async redeliver(deliveryId): Promise<RedeliverOutcome> {
      if (await writes.run(() => redeliver.get(clock(), deliveryId))) return "queued";
      const state = deliveryState.get(deliveryId);
      if (!state) return "not-found";
      return state.disabledAt !== null ? "disabled" : "not-failed";
    },
  };
}
