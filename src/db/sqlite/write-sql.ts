import { and, eq } from "drizzle-orm";
import { positional } from "../positional";
import { placeholder as p } from "./bound";
import type { AppDatabase } from "./client";
import { ENDPOINT_COLUMNS } from "./endpoint-columns";
import { plants, tokens } from "./schema";
import type { WriteSql } from "./write-statements";

/**
 * The SQL of every write. Plants and tokens are written by Drizzle from the schema; the webhook
 * writes need SQLite's INSERT … SELECT and RETURNING forms, written by hand.
 */
export function writeSql(db: AppDatabase): WriteSql {
  return {
    insertPlant: {
      mode: "get",
      sql: positional(
        db
          .insert(plants)
          .values({ ownerId: p("ownerId"), id: p("id"), name: p("name"), tag: p("tag") })
          .onConflictDoNothing()
          .returning({ name: plants.name, tag: plants.tag }),
        ["ownerId", "id", "name", "tag"],
      ),
    },
    deletePlant: {
      mode: "get",
      sql: positional(
        db
          .delete(plants)
          .where(and(eq(plants.ownerId, p("ownerId")), eq(plants.id, p("id"))))
          .returning({ ownerId: plants.ownerId }),
        ["ownerId", "id"],
      ),
    },
    touchToken: {
      mode: "run",
      sql: positional(
        db
          .update(tokens)
          .set({ lastUsedAt: p("at") })
          .where(eq(tokens.id, p("tokenId"))),
        ["at", "tokenId"],
      ),
    },
    registerWebhook: {
      mode: "get",
      sql: `INSERT INTO webhooks (owner_id, url, secret, created_at)
        SELECT ?1, ?2, ?3, ?4 WHERE (SELECT count(*) FROM webhooks WHERE owner_id = ?1) < ?5
        RETURNING ${ENDPOINT_COLUMNS}`,
    },
    removeWebhook: { mode: "get", sql: "DELETE FROM webhooks WHERE owner_id = ? AND id = ? RETURNING id" },
    claimDeliveries: {
      mode: "all",
      sql: `UPDATE webhook_deliveries SET next_attempt_at = ?1
        WHERE seq IN (SELECT seq FROM webhook_deliveries WHERE next_attempt_at <= ?2 ORDER BY next_attempt_at LIMIT ?3)
        RETURNING seq, id, webhook_id AS webhookId, payload, attempts`,
    },
    // A delivery gone with its endpoint records nothing (SELECT … WHERE EXISTS), and a second
    // record of one attempt is ignored (its key).
    recordAttempt: {
      mode: "run",
      sql: `INSERT INTO webhook_attempts (delivery_seq, attempt, at, status_code, duration_ms, error, outcome, retry_in_ms)
        SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8 WHERE EXISTS (SELECT 1 FROM webhook_deliveries WHERE seq = ?1)
        ON CONFLICT DO NOTHING`,
    },
    redeliver: {
      mode: "get",
      sql: `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?1
        WHERE id = ?2 AND status = 'failed'
          AND (SELECT disabled_at FROM webhooks WHERE webhooks.id = webhook_id) IS NULL
        RETURNING status`,
    },
  };
}
