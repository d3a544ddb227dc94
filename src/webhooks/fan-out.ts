import { changeJson } from "../changes/model";
import type { Change, ChangeStore } from "../core/changes";
import type { EndpointCursor, NewDelivery, WebhookStore } from "../core/stores";
import { plantJson } from "../plants/fields";
import { PLANT_FIELDS } from "../plants/model";

/** Changes read per statement for one endpoint. */
const PAGE = 500;
/** Changes a delivery log's read fans out per endpoint first. */
const OWNER_BUDGET = 5_000;
/** Endpoints a fan-out looks at per pass. */
const ENDPOINTS_PER_PASS = 100;

/**
 * What an endpoint is sent for a change, if anything: registered with `events`, the change itself
 * for those types; without, the interface's `/plant/webhook`: the NewPlant of each created plant.
 */
export function bodyFor(events: EndpointCursor["events"], change: Change): string | undefined {
  if (events === undefined)
    return change.type === "plant.created" ? plantJson(PLANT_FIELDS, change.id, change.plant) : undefined;
  return events.includes(change.type) ? changeJson(change) : undefined;
}

/** `msg_`, the change's time in ms as 12 hex digits (the log is in time order), 20 random hex digits. */
const deliveryId = (at: number) =>
  `msg_${at.toString(16).padStart(12, "0")}${Buffer.from(crypto.getRandomValues(new Uint8Array(10))).toString("hex")}`;

/**
 * The webhook outbox's feed: each endpoint's owner's changes past its cursor become its deliveries, in
 * seq order, the cursor moved in the same transaction (exactly once, across instances too).
 */
export function createFanOut(webhooks: WebhookStore, changes: ChangeStore) {
  /** The endpoint's changes up to `budget` of them; how many it took. */
  async function feed(endpoint: EndpointCursor, budget: number): Promise<number> {
    let taken = 0;
    let cursor = endpoint.cursor;
    while (taken < budget) {
      const page = await changes.read(endpoint.ownerId, BigInt(cursor), Math.min(PAGE, budget - taken));
      const last = page.changes.at(-1);
      if (!last) break;
      const deliveries: NewDelivery[] = [];
      for (const change of page.changes) {
        const payload = bodyFor(endpoint.events, change);
        if (payload !== undefined)
          deliveries.push({ id: deliveryId(change.at), type: change.type, at: change.at, payload });
      }
      // Another fan-out took these first (or the endpoint went): it goes on from there.
      if (!(await webhooks.fanOut(endpoint.id, cursor, last.seq, deliveries))) break;
      taken += page.changes.length;
      cursor = last.seq;
      if (!page.more) break;
    }
    return taken;
  }

  return {
    /** Endpoints taking attempts get their new changes, up to `budget` in all; how many were taken. */
    async due(circuitFailures: number, budget = 1_000): Promise<number> {
      await changes.settle(true);
      let taken = 0;
      for (const endpoint of await webhooks.behind({ count: ENDPOINTS_PER_PASS, circuitFailures })) {
        if (taken >= budget) break;
        taken += await feed(endpoint, budget - taken);
      }
      return taken;
    },
    /**
     * An owner's endpoints, whatever their circuits, before its delivery log is read: up to
     * OWNER_BUDGET changes each (a longer backlog shows as the dispatcher fans it out).
     */
    async owner(ownerId: number): Promise<void> {
      for (const endpoint of await webhooks.behind({ count: ENDPOINTS_PER_PASS, circuitFailures: 0, ownerId })) {
        await feed(endpoint, OWNER_BUDGET);
      }
    },
  };
}

export type FanOut = ReturnType<typeof createFanOut>;
