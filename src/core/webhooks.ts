import type { ChangeType } from "./changes";

/** A webhook endpoint as its owner sees it: never its secret. */
export interface WebhookEndpoint {
  id: number;
  url: string;
  createdAt: Date;
  disabled: boolean;
  /** The change types it takes; none for the interface's `/plant/webhook` (plant.created, the NewPlant as body). */
  events?: ChangeType[];
}

/** An endpoint as the fan-out sees it: the newest of its owner's changes it has had (src/webhooks/fan-out.ts). */
export interface EndpointCursor {
  id: number;
  ownerId: number;
  cursor: number;
  events: ChangeType[] | undefined;
}

/** A delivery the fan-out writes: its `webhook-id`, the change's type and time (ms), the exact body. */
export interface NewDelivery {
  id: string;
  type: ChangeType;
  at: number;
  payload: string;
}

export const DELIVERY_STATUSES = ["pending", "delivered", "failed"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** `id` is the delivery's `webhook-id`. */
export interface DeliveryListing {
  id: string;
  type: ChangeType;
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
 * An endpoint's first attempts only as a run from its oldest unattempted delivery (past `held`): none while
 * that one is leased, so every instance makes them in seq order, after a crash too.
 */
export interface ClaimRequest {
  count: number;
  leaseMs: number;
  perEndpoint: number;
  busy: ReadonlyMap<number, number>;
  /** Per endpoint, the last seq of this instance's run of first attempts: the run goes on after it. */
  held?: ReadonlyMap<number, number>;
  circuit: { failures: number; restMs: number };
}

/** `busy` or `held` as the claim statements take them: {"<endpoint id>": number}. */
export const busyJson = (busy: ReadonlyMap<number, number> = new Map()): string =>
  JSON.stringify(Object.fromEntries(busy));

/** An endpoint's `events` column: a JSON array, or null for the interface's plant.created. */
export const eventsOf = (events: string | null) => (events === null ? undefined : (JSON.parse(events) as ChangeType[]));

/** An endpoint, and its cursor, as both engines read them: `events` as stored. */
export type EndpointRow = Omit<WebhookEndpoint, "events"> & { events: string | null };
export const endpointOf = ({ events, ...row }: EndpointRow): WebhookEndpoint =>
  events === null ? row : { ...row, events: eventsOf(events) };
export type CursorRow = Omit<EndpointCursor, "events"> & { events: string | null };
export const cursorOf = (row: CursorRow): EndpointCursor => ({ ...row, events: eventsOf(row.events) });

/** An attempt as both engines' recordAttempt statements bind it, its time as each engine keeps one. */
export const attemptParams = <At>(a: AttemptRecord, at: At) => [
  a.deliverySeq,
  a.attempt,
  at,
  a.statusCode ?? null,
  Math.round(a.durationMs),
  a.error ?? null,
  a.outcome,
  a.retryInMs === undefined ? null : Math.round(a.retryInMs),
];

export type RedeliverOutcome = "queued" | "not-found" | "not-failed" | "disabled";

/**
 * Webhook endpoints and their outbox, which the change log feeds: the fan-out (src/webhooks/fan-out.ts)
 * reads each endpoint's new changes and writes their deliveries, off the request's path.
 */
export interface WebhookStore {
  /** Undefined when the owner already has `max` endpoints; it takes its owner's changes from the next one on. */
  register(
    ownerId: number,
    url: string,
    secret: string,
    max: number,
    events: ChangeType[] | undefined,
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
   * Up to `count` enabled endpoints whose owner has changes past their cursor, none resting (its
   * circuit open) with deliveries pending; with `ownerId`, that owner's enabled endpoints, whatever their state.
   */
  behind(request: { count: number; circuitFailures: number; ownerId?: number }): Promise<EndpointCursor[]>;
  /**
   * Moves the endpoint's cursor from `from` to `to` and writes `deliveries`, in one transaction;
   * false (nothing written) when another fan-out moved it first or the endpoint is gone or disabled.
   */
  fanOut(endpointId: number, from: number, to: number, deliveries: NewDelivery[]): Promise<boolean>;
  /** Claims due deliveries: no other claim sees them for `leaseMs`, so each attempt is made by one instance. */
  claimDue(request: ClaimRequest): Promise<ClaimedDelivery[]>;
  /** Makes claimed deliveries due again now, unattempted (a claim let go of them). */
  release(deliverySeqs: number[]): Promise<void>;
  /** Records an attempt; a second record of the same attempt changes nothing. */
  recordAttempt(record: AttemptRecord): Promise<void>;
  /** Deliveries still to be made; grows with the outbox: not for a scrape. */
  pendingCount(): Promise<number>;
  /** Removes up to `count` of the oldest finished deliveries created before `before` (ms); pending ones stay. */
  pruneFinished(before: number, count: number): Promise<number>;
  /** For the CLI; undefined when there is no such endpoint. */
  failedDeliveries(webhookId: number): Promise<Array<DeliveryListing & { lastError: string | null }> | undefined>;
  redeliver(deliveryId: string): Promise<RedeliverOutcome>;
}
