/** What the webhook features need from a database, whatever the engine. */

/** A webhook endpoint as its owner sees it: never its secret. */
export interface WebhookEndpoint {
  id: number;
  url: string;
  createdAt: Date;
  disabled: boolean;
}

export type DeliveryStatus = "pending" | "delivered" | "failed";

/** One delivery in an endpoint's log; `id` is its `webhook-id`. */
export interface DeliveryListing {
  id: string;
  status: DeliveryStatus;
  attempts: number;
  lastStatus: number | null;
  createdAt: Date;
  nextAttemptAt: Date | null;
}

/** A due delivery claimed by this instance, with what sending it needs. */
export interface ClaimedDelivery {
  seq: number;
  id: string;
  webhookId: number;
  url: string;
  secret: string;
  payload: string;
  /** Attempts made before this one. */
  attempts: number;
}

/** One attempt as made; recording it applies `outcome` to the delivery (and a 410 to its endpoint). */
export interface AttemptRecord {
  deliverySeq: number;
  /** 1 for the first attempt. */
  attempt: number;
  at: number;
  statusCode: number | undefined;
  durationMs: number;
  error: string | undefined;
  outcome: DeliveryStatus;
  /** When `outcome` is "pending": the wait before the next attempt. */
  retryInMs: number | undefined;
}

/**
 * What one claim may take: `count` due deliveries at most, leased for `leaseMs`, fairly: at
 * most `perEndpoint` per endpoint with the attempts this instance has in flight (`busy`, by
 * endpoint id) counted, one from each owner in turn, and, from an endpoint whose last
 * `circuit.failures` attempts all failed, nothing until `circuit.restMs` after the latest, then
 * one at a time.
 */
export interface ClaimRequest {
  count: number;
  leaseMs: number;
  perEndpoint: number;
  busy: ReadonlyMap<number, number>;
  circuit: { failures: number; restMs: number };
}

/** `busy` as the claim statements take it: one JSON object, {"<endpoint id>": attempts in flight}. */
export const busyJson = (busy: ReadonlyMap<number, number>): string => JSON.stringify(Object.fromEntries(busy));

export type RedeliverOutcome = "queued" | "not-found" | "not-failed" | "disabled";

/** Events fanned out per statement: up to 10 times as many deliveries, a few ms of the writer. */
export const FAN_OUT_EVENTS = 100;
/** Batches one claim fans out at most before it claims: a backlog of events goes over several claims. */
export const FAN_OUT_CLAIM_BATCHES = 10;

/**
 * Runs `fanOut` (events fanned out in one statement, oldest first; how many it took) until a
 * batch comes back short or `batches` ran; how many events in all.
 */
export async function fanOutWaiting(fanOut: (count: number) => Promise<number>, batches = Number.POSITIVE_INFINITY) {
  let total = 0;
  for (let batch = 0; batch < batches; batch++) {
    const taken = await fanOut(FAN_OUT_EVENTS);
    total += taken;
    if (taken < FAN_OUT_EVENTS) break;
  }
  return total;
}

/**
 * Before a log read: the owner's waiting events fanned out, so the log shows them. A fan-out
 * that cannot write (a full disk, a held lock) does not cost the read: it shows what is there,
 * and the dispatcher's claims, which log their failures, fan the events out later.
 */
export async function fanOutBeforeReading(fanOut: (count: number) => Promise<number>): Promise<void> {
  await fanOutWaiting(fanOut).catch(() => 0);
}

/**
 * Webhook endpoints and their outbox. A created plant's statement writes one event when its
 * owner has an enabled endpoint (a trigger per engine, in the plant's transaction); the event
 * is fanned out into one delivery per endpoint that was enabled then and still is, off the
 * request's path: by the dispatcher's claim, and by a read of the log, so the log shows a
 * created plant's deliveries at once. This store registers endpoints, reads the log and lets a
 * dispatcher claim and record attempts.
 */
export interface WebhookStore {
  /** The new endpoint, or undefined when the owner already has `max` of them. */
  register(
    ownerId: number,
    url: string,
    secret: string,
    max: number,
  ): Promise<(WebhookEndpoint & { secret: string }) | undefined>;
  list(ownerId: number): Promise<WebhookEndpoint[]>;
  /** True when the owner had the endpoint and it is gone now, with its deliveries. */
  remove(ownerId: number, id: number): Promise<boolean>;
  /**
   * Up to `count` of an endpoint's deliveries in creation order, after the delivery `after`;
   * "no-endpoint" when the endpoint is not the owner's, "unknown-after" when `after` is not
   * one of its deliveries.
   */
  deliveries(
    ownerId: number,
    webhookId: number,
    after: string | undefined,
    count: number,
  ): Promise<{ deliveries: DeliveryListing[]; more: boolean } | "no-endpoint" | "unknown-after">;
  /**
   * Fans out waiting events first (a bounded number of batches; each event exactly once, on
   * PostgreSQL across instances too), then claims due deliveries as `request` allows, each for
   * `leaseMs`: no other claim sees them until then, so with several instances each attempt is
   * made by one of them.
   */
  claimDue(request: ClaimRequest): Promise<ClaimedDelivery[]>;
  /** Records an attempt; a second record of the same attempt changes nothing. */
  recordAttempt(record: AttemptRecord): Promise<void>;
  /**
   * Deliveries still to be made, over every endpoint, a created plant whose deliveries are not
   * written yet (its event) counted once. Grows with the outbox: not for a scrape;
   * it never holds this thread for long (SQLite counts in short steps, PostgreSQL in the server).
   */
  pendingCount(): Promise<number>;
  /**
   * Removes up to `count` of the oldest delivered and failed deliveries created before `before`
   * (ms since the epoch), with their attempts; how many it removed. Pending ones stay. On
   * PostgreSQL, rows another instance is removing are skipped, so instances may prune at once.
   */
  pruneFinished(before: number, count: number): Promise<number>;
  /** An endpoint's failed deliveries (the CLI); undefined when there is no such endpoint. */
  failedDeliveries(webhookId: number): Promise<Array<DeliveryListing & { lastError: string | null }> | undefined>;
  /** Makes a failed delivery due again now (the CLI). */
  redeliver(deliveryId: string): Promise<RedeliverOutcome>;
}
