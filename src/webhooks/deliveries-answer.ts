import type { DeliveryListing, WebhookStore } from "../core/stores";
import { HttpError } from "../http/errors";
import type { PageOf, PageReader } from "../http/pager";

/** Deliveries read per statement: about 170 KiB of JSON. */
const CHUNK = 1000;

interface DeliveriesRequest {
  ownerId: number;
  webhookId: number;
  limit: number | undefined;
}

type DeliveryPage = PageOf<string> & { deliveries: DeliveryListing[] };

/** An endpoint's deliveries for the pager (src/http/pager.ts), keyed by delivery id. */
export function deliveryPages(
  store: WebhookStore,
  { ownerId, webhookId, limit }: DeliveriesRequest,
): PageReader<string, DeliveryPage> {
  return {
    chunkSize: CHUNK,
    async read(after, count) {
      const found = await store.deliveries(ownerId, webhookId, after, count);
      if (found === "no-endpoint") throw new HttpError(404, "id: you have no webhook endpoint with this id");
      if (found === "unknown-after") throw new HttpError(400, "after: not one of this endpoint's deliveries");
      const { deliveries, more } = found;
      return { deliveries, more, count: deliveries.length, last: deliveries.at(-1)?.id ?? after };
    },
    json: (page) => JSON.stringify(page.deliveries),
    link: (last) => `</webhooks/${webhookId}/deliveries?limit=${limit}&after=${encodeURIComponent(last)}>; rel="next"`,
  };
}
