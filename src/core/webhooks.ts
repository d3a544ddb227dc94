/** A webhook endpoint as its owner sees it: never its secret. */
export interface WebhookEndpoint {
  id: number;
  url: string;
  createdAt: Date;
  disabled: boolean;
}

export type DeliveryStatus = "pending" | "delivered" | "failed";

/** `id` is the delivery's `webhook-id`. */
export interface DeliveryListing {
  id: string;
  status: DeliveryStatus;
  attempts: number;
  lastStatus: number | null;
  createdAt: Date;
  nextAttemptAt: Date | null;
}

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

/** Recording an attempt applies `outcome` to the delivery (and a 410 to its endpoint). */
export interface AttemptRecord {
  deliverySeq: number;
  /** 1 for the first attempt. */
  attempt: number;
  at: number;
  statusCode: number | undefined;
  durationMs: number;
  error: string | undefined;
  outcome: DeliveryStatus;
  retryInMs: number | undefined;
}

/**
 * At most `count` due deliveries leased for `leaseMs`, owners in turn: `perEndpoint` per endpoint with
 * this instance's attempts in flight (`busy`) counted, none from a resting endpoint (webhooks/rules.ts).
 */
export interface ClaimRequest {
  count: number;
  leaseMs: number;
  perEndpoint: number;
  busy: ReadonlyMap<number, number>;
  circuit: { failures: number; restMs: number };
}

/** `busy` as the claim statements take it: {"<endpoint id>": attempts in flight}. */
export const busyJson = (busy: ReadonlyMap<number, number>): string => JSON.stringify(Object.fromEntries(busy));

export type RedeliverOutcome = "queued" | "not-found" | "not-failed" | "disabled";

/** Events fanned out per statement (up to 10 times as many deliveries). */
export const FAN_OUT_EVENTS = 100;
/** A claim fans out at most this many batches first: a backlog goes over several claims. */
export const FAN_OUT_CLAIM_BATCHES = 10;

/** Runs `fanOut` (one statement; how many events it took) until a batch is short or `batches` ran. */
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
 * Before a log read, so the log shows the owner's waiting events. A fan-out that cannot write (a
 * full disk, a held lock) does not fail the read: the dispatcher's claims fan them out later.
 */
export async function fanOutBeforeReading(fanOut: (count: number) => Promise<number>): Promise<void> {
  await fanOutWaiting(fanOut).catch(() => 0);
}

/**
 * Webhook endpoints and their outbox: a created plant writes one event (decision 0009), which claims
 * and log reads fan out into one delivery per endpoint, off the request's path.
 */
export interface WebhookStore {
  /** Undefined when the owner already has `max` endpoints. */
  register(
    ownerId: number,
    url: string,
    secret: string,
    max: number,
  ): Promise<(WebhookEndpoint & { secret: string }) | undefined>;
  list(ownerId: number): Promise<WebhookEndpoint[]>;
  remove(ownerId: number, id: number): Promise<boolean>;
  /** Up to `count` deliveries in creation order, after the delivery `after`. */
  deliveries(
    ownerId: number,
    webhookId: number,
    after: string | undefined,
    count: number,
  ): Promise<{ deliveries: DeliveryListing[]; more: boolean } | "no-endpoint" | "unknown-after">;
  /**
   * Fans out waiting events first (each exactly once, across instances too), then claims due
   * deliveries: no other claim sees them for `leaseMs`, so each attempt is made by one instance.
   */
  claimDue(request: ClaimRequest): Promise<ClaimedDelivery[]>;
  /** Records an attempt; a second record of the same attempt changes nothing. */
  recordAttempt(record: AttemptRecord): Promise<void>;
  /** Deliveries still to be made (an event not yet fanned out counts once); grows with the outbox: not for a scrape. */
  pendingCount(): Promise<number>;
  /** Removes up to `count` of the oldest finished deliveries created before `before` (ms); pending ones stay. */
  pruneFinished(before: number, count: number): Promise<number>;
  /** For the CLI; undefined when there is no such endpoint. */
  failedDeliveries(webhookId: number): Promise<Array<DeliveryListing & { lastError: string | null }> | undefined>;
  redeliver(deliveryId: string): Promise<RedeliverOutcome>;
}
