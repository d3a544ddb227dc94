import type { SQL } from "bun";
import type {
  ClaimedDelivery,
  DeliveryListing,
  DeliveryStatus,
  RedeliverOutcome,
  WebhookStore,
} from "../../core/stores";

interface EndpointRow {
  id: number;
  url: string;
  created_at: Date;
  disabled_at: Date | null;
}

interface DeliveryRow {
  id: string;
  status: DeliveryStatus;
  attempts: number;
  last_status: number | null;
  created_at: Date;
  next_attempt_at: Date | null;
}

const toEndpoint = (row: EndpointRow) => ({
  id: row.id,
  url: row.url,
  createdAt: row.created_at,
  disabled: row.disabled_at !== null,
});

const toDelivery = (row: DeliveryRow): DeliveryListing => ({
  id: row.id,
  status: row.status,
  attempts: row.attempts,
  lastStatus: row.last_status,
  createdAt: row.created_at,
  nextAttemptAt: row.next_attempt_at,
});

/** A key for the per-owner advisory lock that keeps the endpoint cap exact across instances ("webhook"). */
const REGISTER_LOCK_SPACE = 0x7768;

/**
 * Webhook endpoints and the outbox on PostgreSQL (the triggers are in drizzle/postgres/0003).
 * Several instances claim due deliveries with `FOR UPDATE SKIP LOCKED`: a row one of them is
 * claiming is skipped by the others, and once claimed it is not due again until its lease ends.
 * Claims and leases use the database's clock, which every instance shares.
 */
export function createPostgresWebhookStore(client: SQL, clock: () => number): WebhookStore {
  return {
    register: (ownerId, url, secret, max) =>
      client.begin(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(${REGISTER_LOCK_SPACE}, ${ownerId})`;
        const [{ n }] = (await tx`SELECT count(*)::int AS n FROM webhooks WHERE owner_id = ${ownerId}`) as [
          { n: number },
        ];
        if (n >= max) return undefined;
        const [row] = (await tx`
          INSERT INTO webhooks (owner_id, url, secret, created_at)
          VALUES (${ownerId}, ${url}, ${secret}, ${new Date(clock())})
          RETURNING id, url, created_at, disabled_at`) as EndpointRow[];
        return row && { ...toEndpoint(row), secret };
      }),

    async list(ownerId) {
      const rows = (await client`
        SELECT id, url, created_at, disabled_at FROM webhooks WHERE owner_id = ${ownerId} ORDER BY id`) as EndpointRow[];
      return rows.map(toEndpoint);
    },

    async remove(ownerId, id) {
      const rows = await client`DELETE FROM webhooks WHERE owner_id = ${ownerId} AND id = ${id} RETURNING id`;
      return rows.length > 0;
    },

    async deliveries(ownerId, webhookId, after, count) {
      // One statement: whether the endpoint is the owner's, where `after` is, and the page.
      const rows = (await client`
        WITH endpoint AS (SELECT id FROM webhooks WHERE owner_id = ${ownerId} AND id = ${webhookId}),
        start AS (
          SELECT CASE WHEN ${after ?? null}::text IS NULL THEN 0
            ELSE (SELECT seq FROM webhook_deliveries WHERE webhook_id = ${webhookId} AND id = ${after ?? null}) END AS seq
        )
        SELECT (SELECT count(*)::int FROM endpoint) AS found, start.seq IS NOT NULL AS started, d.*
        FROM start LEFT JOIN LATERAL (
          SELECT id, status, attempts, last_status, created_at, next_attempt_at FROM webhook_deliveries
          WHERE webhook_id = (SELECT id FROM endpoint) AND seq > start.seq ORDER BY seq LIMIT ${count + 1}
        ) d ON true`) as Array<DeliveryRow & { found: number; started: boolean }>;
      const first = rows[0];
      if (!first || first.found === 0) return "no-endpoint";
      if (!first.started) return "unknown-after";
      const found = rows.filter((row) => row.id !== null);
      const more = found.length > count;
      if (more) found.pop();
      return { deliveries: found.map(toDelivery), more };
    },

    async claimDue(count, leaseMs) {
      const rows = (await client`
        UPDATE webhook_deliveries d SET next_attempt_at = now() + ${leaseMs} * interval '1 millisecond'
        FROM webhooks w
        WHERE w.id = d.webhook_id AND d.seq IN (
          SELECT seq FROM webhook_deliveries WHERE next_attempt_at <= now()
          ORDER BY next_attempt_at LIMIT ${count} FOR UPDATE SKIP LOCKED
        )
        RETURNING d.seq, d.id, d.webhook_id, d.payload, d.attempts, w.url, w.secret`) as Array<{
        seq: string;
        id: string;
        webhook_id: number;
        payload: string;
        attempts: number;
        url: string;
        secret: string;
      }>;
      return rows.map(
        (row): ClaimedDelivery => ({
          seq: Number(row.seq),
          id: row.id,
          webhookId: row.webhook_id,
          url: row.url,
          secret: row.secret,
          payload: row.payload,
          attempts: row.attempts,
        }),
      );
    },

    async recordAttempt(a) {
      await client`
        INSERT INTO webhook_attempts (delivery_seq, attempt, at, status_code, duration_ms, error, outcome, retry_in_ms)
        SELECT ${a.deliverySeq}, ${a.attempt}, ${new Date(a.at)}, ${a.statusCode ?? null}, ${Math.round(a.durationMs)},
          ${a.error ?? null}, ${a.outcome}, ${a.retryInMs === undefined ? null : Math.round(a.retryInMs)}
        WHERE EXISTS (SELECT 1 FROM webhook_deliveries WHERE seq = ${a.deliverySeq})
        ON CONFLICT DO NOTHING`;
    },

    async pendingCount() {
      const [{ n }] = (await client`
        SELECT count(*)::int AS n FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL`) as [{ n: number }];
      return n;
    },

    async failedDeliveries(webhookId) {
      const [exists] = await client`SELECT id FROM webhooks WHERE id = ${webhookId}`;
      if (!exists) return undefined;
      const rows = (await client`
        SELECT d.id, d.status, d.attempts, d.last_status, d.created_at, d.next_attempt_at,
          (SELECT error FROM webhook_attempts a WHERE a.delivery_seq = d.seq ORDER BY attempt DESC LIMIT 1) AS last_error
        FROM webhook_deliveries d WHERE d.webhook_id = ${webhookId} AND d.status = 'failed' ORDER BY d.seq`) as Array<
        DeliveryRow & { last_error: string | null }
      >;
      return rows.map((row) => ({ ...toDelivery(row), lastError: row.last_error }));
    },

    async redeliver(deliveryId): Promise<RedeliverOutcome> {
      const [row] = (await client`
        WITH target AS (
          SELECT d.seq, d.status, w.disabled_at FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
          WHERE d.id = ${deliveryId}
        ), queued AS (
          UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now()
          WHERE seq = (SELECT seq FROM target WHERE status = 'failed' AND disabled_at IS NULL)
          RETURNING seq
        )
        SELECT target.status, target.disabled_at, (SELECT count(*)::int FROM queued) AS queued FROM target`) as Array<{
        status: string;
        disabled_at: Date | null;
        queued: number;
      }>;
      if (!row) return "not-found";
      if (row.queued > 0) return "queued";
      return row.disabled_at !== null ? "disabled" : "not-failed";
    },
  };
}
