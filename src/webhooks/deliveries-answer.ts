import type { DeliveryListing, WebhookStore } from "../core/stores";
import { nextTurn } from "../core/timers";
import { HttpError, jsonHeaders } from "../http/errors";

/** Deliveries read per statement: about 170 KiB of JSON. */
const CHUNK = 1000;
const encoder = new TextEncoder();

export interface DeliveriesRequest {
  ownerId: number;
  webhookId: number;
  after: string | undefined;
  limit: number | undefined;
  onFault: (error: unknown) => void;
}

const nextLink = (webhookId: number, limit: number, after: string) =>
  `</webhooks/${webhookId}/deliveries?limit=${limit}&after=${encodeURIComponent(after)}>; rel="next"`;

async function page(store: WebhookStore, request: DeliveriesRequest, after: string | undefined, count: number) {
  const found = await store.deliveries(request.ownerId, request.webhookId, after, count);
  if (found === "no-endpoint") throw new HttpError(404, "id: you have no webhook endpoint with this id");
  if (found === "unknown-after") throw new HttpError(400, "after: not one of this endpoint's deliveries");
  return found;
}

/** Paged and streamed as plants are (src/plants/list-answer.ts), the page's end found first. */
export async function deliveriesAnswer(
  store: WebhookStore,
  request: DeliveriesRequest,
): Promise<{ deliveries: DeliveryListing[]; link?: string } | Response> {
  const { limit, webhookId } = request;
  const first = await page(store, request, request.after, Math.min(limit ?? CHUNK, CHUNK));
  const lastOf = (deliveries: DeliveryListing[], fallback: string | undefined) => deliveries.at(-1)?.id ?? fallback;
  if (!first.more || first.deliveries.length === limit) {
    const last = lastOf(first.deliveries, request.after);
    const link = limit !== undefined && first.more && last ? nextLink(webhookId, limit, last) : undefined;
    return { deliveries: first.deliveries, link };
  }

  let link: string | undefined;
  if (limit !== undefined) {
    let cursor = lastOf(first.deliveries, request.after);
    let left = limit - first.deliveries.length;
    let more = true;
    while (left > 0 && more) {
      const step = await page(store, request, cursor, Math.min(left, CHUNK));
      left -= step.deliveries.length;
      cursor = lastOf(step.deliveries, cursor);
      more = step.more;
      await nextTurn();
    }
    if (left === 0 && more && cursor) link = nextLink(webhookId, limit, cursor);
  }

  let remaining = (limit ?? Number.POSITIVE_INFINITY) - first.deliveries.length;
  let cursor = lastOf(first.deliveries, request.after);
  let started = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (!started) {
          started = true;
          controller.enqueue(encoder.encode(JSON.stringify(first.deliveries).slice(0, -1)));
          return;
        }
        const step = remaining > 0 ? await page(store, request, cursor, Math.min(remaining, CHUNK)) : undefined;
        const deliveries = step?.deliveries ?? [];
        remaining -= deliveries.length;
        cursor = lastOf(deliveries, cursor);
        const text = deliveries.length === 0 ? "" : `,${JSON.stringify(deliveries).slice(1, -1)}`;
        const last = !step?.more || remaining <= 0 || deliveries.length === 0;
        controller.enqueue(encoder.encode(last ? `${text}]` : text));
        if (last) controller.close();
        else await nextTurn();
      } catch (error) {
        request.onFault(error);
        controller.error();
      }
    },
  });
  return new Response(body, { headers: jsonHeaders(link) });
}
