import { Elysia } from "elysia";
import { type AuthDeps, bearerAuth } from "../auth/plugin";
import type { FaultLog } from "../core/fault";
import type { DeliveryListing, WebhookStore } from "../core/stores";
import { HttpError } from "../http/errors";
import { jsonBody } from "../http/json-body";
import { BAD_PATH_ID, errorModels, linkHeader, modelResponse, routeErrors } from "../http/models";
import { type PageOf, type PageReader, pagedAnswer } from "../http/pager";
import { checkQueryNames } from "../http/query-names";
import type { FanOut } from "./fan-out";
import { deliveriesQuery, webhookIdParams, webhookModels } from "./model";
import { AddressRefused, checkedAddress, type Resolver } from "./send";
import { newSecret } from "./signing";

/** SPEC: at most 10 endpoints per user. */
export const MAX_ENDPOINTS = 10;
const NO_SUCH_WEBHOOK = "You have no webhook endpoint with this id (another user's are not yours to see)";

export interface WebhookRoutesDeps extends AuthDeps {
  webhooks: WebhookStore;
  log: FaultLog;
  allowPrivate: boolean;
  resolve?: Resolver;
  fanOut: FanOut;
}

/** Deliveries read per statement: about 170 KiB of JSON. */
const DELIVERIES_CHUNK = 1000;

type DeliveryPage = PageOf<string> & { deliveries: DeliveryListing[] };

/** An endpoint's deliveries for the pager (src/http/pager.ts), keyed by delivery id. */
function deliveryPages(store: WebhookStore, ownerId: number, webhookId: number, limit: number | undefined) {
  return {
    chunkSize: DELIVERIES_CHUNK,
    async read(after, count) {
      const found = await store.deliveries(ownerId, webhookId, after, count);
      if (found === "no-endpoint") throw new HttpError(404, "id: you have no webhook endpoint with this id");
      if (found === "unknown-after") throw new HttpError(400, "after: not one of this endpoint's deliveries");
      const { deliveries, more } = found;
      return { deliveries, more, count: deliveries.length, last: deliveries.at(-1)?.id ?? after };
    },
    json: (page) => JSON.stringify(page.deliveries),
    link: (last) => `</webhooks/${webhookId}/deliveries?limit=${limit}&after=${encodeURIComponent(last)}>; rel="next"`,
  } satisfies PageReader<string, DeliveryPage>;
}

/** The URL as stored, or a 400; each attempt checks the address again, as what a name resolves to can change. */
async function acceptedUrl(text: string, allowPrivate: boolean, resolve: Resolver | undefined): Promise<string> {
  const url = URL.parse(text);
  if (url?.protocol !== "http:" && url?.protocol !== "https:")
    throw new HttpError(400, "url: must be an absolute http or https URL");
  if (url.username !== "" || url.password !== "")
    throw new HttpError(400, "url: must not contain credentials (user:password@)");
  await checkedAddress(url, { allowPrivate, resolve }).catch((error) => {
    throw error instanceof AddressRefused ? new HttpError(400, error.message) : error;
  });
  return url.href;
}

export function webhookRoutes(deps: WebhookRoutesDeps) {
  const { webhooks, body: bodyLimits, log, allowPrivate, resolve, fanOut } = deps;
  return new Elysia({ prefix: "/webhooks", tags: ["webhooks"] })
    .use(bearerAuth(deps))
    .model({ ...webhookModels, ...errorModels })
    .post(
      "",
      async ({ body, user, set }) => {
        const url = await acceptedUrl(body.url, allowPrivate, resolve);
        const endpoint = await webhooks.register(user.id, url, newSecret(), MAX_ENDPOINTS, body.events);
        if (!endpoint)
          throw new HttpError(409, `url: you already have ${MAX_ENDPOINTS} webhook endpoints; delete one first`);
        set.status = 201;
        return { id: endpoint.id, url: endpoint.url, secret: endpoint.secret };
      },
      {
        scope: "webhooks",
        ...jsonBody(bodyLimits),
        body: "NewWebhook",
        detail: {
          summary: "Register a webhook endpoint",
          description:
            "From now on, every plant you create is sent to the URL as the interface's `/plant/webhook` (its " +
            "NewPlant), or with `events` each change of those types as the change itself (see the document's " +
            "`webhooks` section), signed with the secret returned here: store it, it is shown only once.",
          operationId: "addWebhook",
          responses: {
            201: modelResponse("The endpoint, with its signing secret", "RegisteredWebhook"),
            ...routeErrors({
              400: "`url` is not an absolute http(s) URL, holds credentials, or its host resolves to a private address (allowed only with WEBHOOK_ALLOW_PRIVATE); or `events` is not a non-empty array of distinct change types",
              409: `You already have ${MAX_ENDPOINTS} webhook endpoints, the most allowed; delete one first`,
            }),
          },
        },
      },
    )
    .get("", ({ user }) => webhooks.list(user.id), {
      scope: "webhooks",
      detail: {
        summary: "List your webhook endpoints",
        description: "Each with its URL and whether it is disabled; their secrets were shown only when registered.",
        operationId: "listWebhooks",
        responses: {
          200: modelResponse("Your endpoints, oldest first (never their secrets)", "Webhook", { array: true }),
        },
      },
    })
    .delete(
      "/:id",
      async ({ params, user, set }) => {
        if (!(await webhooks.remove(user.id, Number(params.id))))
          throw new HttpError(404, "id: you have no webhook endpoint with this id");
        set.status = 204;
      },
      {
        scope: "webhooks",
        params: webhookIdParams,
        detail: {
          summary: "Delete one of your webhook endpoints",
          description: "Its pending deliveries are dropped with it, and its log.",
          operationId: "deleteWebhook",
          responses: { 204: { description: "Deleted" }, ...routeErrors({ 400: BAD_PATH_ID, 404: NO_SUCH_WEBHOOK }) },
        },
      },
    )
    .get(
      "/:id/deliveries",
      async ({ params, query, user, request, set }) => {
        checkQueryNames(
          request.url,
          deliveriesQuery,
          "this operation takes limit and after. To page, give limit and follow the Link header",
        );
        // The log shows every change made before it was read; one that cannot be written now is later.
        await fanOut.owner(user.id).catch(() => {});
        const limit = query.limit === undefined ? undefined : Number(query.limit);
        const pages = deliveryPages(webhooks, user.id, Number(params.id), limit);
        const onFault = (error: unknown) => log("listing webhook deliveries failed mid-answer", error, request);
        return await pagedAnswer(pages, { after: query.after, limit, onFault }, set.headers);
      },
      {
        scope: "webhooks",
        params: webhookIdParams,
        query: deliveriesQuery,
        detail: {
          summary: "List an endpoint's deliveries",
          description:
            "One delivery per plant created since the endpoint was registered, oldest first, with where it stands. " +
            'Paged as plants are: give `limit` and follow the `Link` header (`rel="next"`).',
          operationId: "listWebhookDeliveries",
          responses: {
            200: {
              ...modelResponse("The endpoint's deliveries, oldest first", "Delivery", { array: true }),
              headers: linkHeader('The next page, when `limit` was given and more deliveries follow (`rel="next"`)'),
            },
            ...routeErrors({
              400: `${BAD_PATH_ID}, or \`limit\` or \`after\` is invalid, or another query parameter was given`,
              404: NO_SUCH_WEBHOOK,
            }),
          },
        },
      },
    );
}
