import type { Database } from "bun:sqlite";
import type { ClaimedDelivery, DeliveryListing, RedeliverOutcome, WebhookStore } from "../../core/stores";
import { nextTurn } from "../../core/timers";
import { attemptParams, busyJson, type CursorRow, cursorOf, type EndpointRow, endpointOf } from "../../core/webhooks";
import { WEBHOOK_SQL as SQL } from "./webhook-queries";
import { countRows, type Write, type Writer } from "./writer";

/** Times as SQLite keeps them, ms; a boolean as 0 or 1. */
type SqliteEndpoint = Omit<EndpointRow, "createdAt" | "disabled"> & { createdAt: number; disabled: number };
type DeliveryRow = Omit<DeliveryListing, "createdAt" | "nextAttemptAt"> & {
  createdAt: number;
  nextAttemptAt: number | null;
};

const toEndpoint = (row: SqliteEndpoint) =>
  endpointOf({ ...row, createdAt: new Date(row.createdAt), disabled: row.disabled === 1 });

const toDelivery = (row: DeliveryRow): DeliveryListing => ({
  ...row,
  createdAt: new Date(row.createdAt),
  nextAttemptAt: row.nextAttemptAt === null ? null : new Date(row.nextAttemptAt),
});

/** Due-index entries the pending count reads per turn of the event loop. */
const PENDING_STEP = 5_000;

/** The dispatcher's writes are bookkeeping: they never take a client's place in the queue. */
export function createSqliteWebhookStore(sqlite: Database, writes: Writer, clock: () => number): WebhookStore {
  const listOwn = sqlite.prepare<SqliteEndpoint, [number]>(SQL.listOwn);
  const ownEndpoint = sqlite.prepare<{ id: number }, [number, number]>(SQL.ownEndpoint);
  const seqOf = sqlite.prepare<{ seq: number }, [number, string]>(SQL.seqOf);
  const page = sqlite.prepare<DeliveryRow, [number, number, number]>(SQL.page);
  const anyDue = sqlite.prepare<{ due: number }, [number, number, number]>(SQL.anyDue);
  const endpointSecret = sqlite.prepare<{ url: string; secret: string }, [number]>(SQL.endpointSecret);
  type Position = { endpoint: number; at: number; seq: number };
  const stepInGroup = sqlite.prepare<Position, [number, number, number, number]>(SQL.pendingStepInGroup);
  const restInGroup = sqlite.prepare<{ n: number }, [number, number, number]>(SQL.pendingRestInGroup);
  const stepPast = sqlite.prepare<Position, [number, number, number]>(SQL.pendingStepPast);
  const restPast = sqlite.prepare<{ n: number }, [number, number]>(SQL.pendingRestPast);
  const endpointExists = sqlite.prepare<{ id: number }, [number]>(SQL.endpointExists);
  const failed = sqlite.prepare<DeliveryRow & { lastError: string | null }, [number]>(SQL.failed);
  const deliveryState = sqlite.prepare<{ status: string; disabledAt: number | null }, [string]>(SQL.deliveryState);
  const behind = sqlite.prepare<CursorRow, [number, number]>(SQL.behind);
  const behindOwner = sqlite.prepare<CursorRow, [number]>(SQL.behindOwner);

  return {
    async register(ownerId, url, secret, max, events) {
      const row = await writes.run<SqliteEndpoint | null>({
        sql: SQL.register,
        mode: "get",
        params: [ownerId, url, secret, clock(), max, events === undefined ? null : JSON.stringify(events)],
      });
      return row ? { ...toEndpoint(row), secret } : undefined;
    },
    list: async (ownerId) => listOwn.all(ownerId).map(toEndpoint),
    remove: async (ownerId, id) => Boolean(await writes.run({ sql: SQL.remove, mode: "get", params: [ownerId, id] })),
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

    behind: async ({ count, circuitFailures, ownerId }) =>
      (ownerId === undefined ? behind.all(circuitFailures, count) : behindOwner.all(ownerId)).map(cursorOf),

    async fanOut(endpointId, from, to, deliveries) {
      const steps: Write[] = [
        { sql: SQL.fanOutCursor, mode: "get", params: [endpointId, from, to] },
        { sql: SQL.fanOutInsert, mode: "run", params: [endpointId, JSON.stringify(deliveries), clock()] },
      ];
      return Boolean(await writes.run({ steps, answer: 0 }, { bookkeeping: true }));
    },

    async claimDue({ count, leaseMs, perEndpoint, busy, held, circuit }) {
      const now = clock();
      if (!anyDue.get(now, circuit.failures, circuit.restMs)) return [];
      const params = [
        now,
        circuit.failures,
        circuit.restMs,
        now + leaseMs,
        count,
        perEndpoint,
        ...[busy, held].map(busyJson),
      ];
      const rows = await writes.run<Array<Omit<ClaimedDelivery, "url" | "secret">>>(
        { sql: SQL.claim, mode: "all", params },
        { bookkeeping: true },
      );
      const claimed: ClaimedDelivery[] = [];
      for (const row of rows) {
        const endpoint = endpointSecret.get(row.webhookId);
        if (endpoint) claimed.push({ ...row, ...endpoint });
      }
      return claimed;
    },

    async release(deliverySeqs) {
      const params = [clock(), JSON.stringify(deliverySeqs)];
      await writes.run({ sql: SQL.release, mode: "run", params }, { bookkeeping: true });
    },

    async recordAttempt(a) {
      await writes.run({ sql: SQL.recordAttempt, mode: "run", params: attemptParams(a, a.at) }, { bookkeeping: true });
    },

    // In steps, so other work runs between them (docs/decisions/0006-outbox-upkeep.md); a row a claim moves
    // meanwhile may count twice or not.
    async pendingCount() {
      let counted = 0;
      let after: Position = { endpoint: Number.MIN_SAFE_INTEGER, at: Number.MIN_SAFE_INTEGER, seq: 0 };
      for (;;) {
        const { endpoint, at, seq } = after;
        let last = stepInGroup.get(endpoint, at, seq, PENDING_STEP - 1);
        if (!last) {
          const inGroup = restInGroup.get(endpoint, at, seq)?.n ?? 0;
          last = stepPast.get(endpoint, at, PENDING_STEP - 1 - inGroup);
          if (!last) return counted + inGroup + (restPast.get(endpoint, at)?.n ?? 0);
        }
        counted += PENDING_STEP;
        after = last;
        await nextTurn();
      }
    },
    pruneFinished: (before, count) => countRows(writes, SQL.pruneFinished, [before, count]),
    async failedDeliveries(webhookId) {
      if (!endpointExists.get(webhookId)) return undefined;
      return failed.all(webhookId).map((row) => ({ ...toDelivery(row), lastError: row.lastError }));
    },

    async redeliver(deliveryId): Promise<RedeliverOutcome> {
      if (await writes.run({ sql: SQL.redeliver, mode: "get", params: [clock(), deliveryId] })) return "queued";
      const state = deliveryState.get(deliveryId);
      if (!state) return "not-found";
      return state.disabledAt !== null ? "disabled" : "not-failed";
    },
  };
}
