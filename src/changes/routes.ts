import type { Change, ChangeStore } from "../core/changes";
import { INT64_MAX } from "../core/plant";
import { HttpError } from "../http/errors";
import { linkHeader, modelResponse, routeErrors } from "../http/models";
import { type PageOf, type PageReader, pagedAnswer } from "../http/pager";
import { checkQueryNames } from "../http/query-names";
import { plantBase } from "../plants/one-plant-routes";
import type { ChangeFeed } from "./feed";
import { changeJson, changeModels, changesQuery, DEFAULT_LIMIT, gone, MAX_LIMIT } from "./model";

const HINT = "this operation takes after and limit; follow the Link header, or pass after=<the last seq you have>";
const LAST_EVENT_ID = /^[0-9]{1,19}$/;

/** Last-Event-ID wins over `after`, as a reconnecting EventSource sends it. */
function streamCursor(request: Request, after: string | undefined): bigint | undefined {
  const header = request.headers.get("last-event-id");
  if (header === null) return after === undefined ? undefined : BigInt(after);
  const value = header.trim();
  if (!LAST_EVENT_ID.test(value) || BigInt(value) > INT64_MAX) {
    throw new HttpError(400, `Last-Event-ID: must be an integer between 0 and ${INT64_MAX}`);
  }
  return BigInt(value);
}

type ChangePage = PageOf<bigint> & { changes: Change[] };

/** The owner's log for the pager: keyed by seq; a cursor older than what is kept is a 410. */
function changePages(store: ChangeStore, ownerId: number, limit: number) {
  let newest = 0;
  return {
    chunkSize: MAX_LIMIT,
    async read(after, count) {
      const page = await store.read(ownerId, after ?? 0n, count);
      newest = page.newest;
      // Without a cursor the log is read from its oldest kept change.
      if (after !== undefined && after < BigInt(page.prunedThrough)) throw gone(page.newest);
      const last = page.changes.at(-1);
      return { ...page, count: page.changes.length, last: last === undefined ? after : BigInt(last.seq) };
    },
    json: (page) => `[${page.changes.map(changeJson).join(",")}]`,
    link: (last) => `</plants/changes?after=${last}&limit=${limit}>; rel="next"`,
    newest: () => newest,
  } satisfies PageReader<bigint, ChangePage> & { newest(): number };
}

/** Accept prefers the stream to JSON: media ranges in any case, `q=0` refuses, a tie is the stream's (RFC 9110 §12.5.1). */
function wantsStream(accept: string | null): boolean {
  const ranges = accept?.toLowerCase();
  if (!ranges?.includes("text/event-stream")) return false;
  let stream = 0;
  let json = 0;
  for (const range of ranges.split(",")) {
    const [type, ...params] = range.split(";").map((part) => part.trim());
    const q = Number(params.find((param) => param.startsWith("q="))?.slice(2) ?? 1) || 0;
    if (type === "text/event-stream") stream = Math.max(stream, q);
    else if (type === "application/json" || type === "application/*" || type === "*/*") json = Math.max(json, q);
  }
  return stream > 0 && stream >= json;
}

export type ChangeRoutesDeps = Parameters<typeof plantBase>[0] & {
  changes: ChangeStore;
  feed: ChangeFeed;
};

export function changeRoutes({ changes, feed, ...auth }: ChangeRoutesDeps) {
  const { notes } = auth;
  return plantBase(auth)
    .model(changeModels)
    .get(
      "/changes",
      async ({ query, user, request, set }) => {
        checkQueryNames(request.url, changesQuery, HINT);
        if (wantsStream(request.headers.get("accept"))) {
          const cursor = streamCursor(request, query.after);
          // A HEAD opens no stream: the framework reads a HEAD's whole body to count it, and this one never ends.
          const body =
            request.method === "HEAD"
              ? null
              : await feed.open(user.id, user.tokenId, cursor, notes.get(request)?.cutOff);
          return new Response(body, {
            headers: { "content-type": "text/event-stream", "cache-control": "no-store", "x-accel-buffering": "no" },
          });
        }
        const limit = query.limit === undefined ? DEFAULT_LIMIT : Number(query.limit);
        const pages = changePages(changes, user.id, limit);
        // At most one read (limit ≤ chunkSize): nothing is streamed, so no fault can come after the status.
        const after = query.after === undefined ? undefined : BigInt(query.after);
        const answer = await pagedAnswer(pages, { after, limit, onFault: () => {} }, set.headers);
        set.headers["changes-cursor"] = String(pages.newest());
        return answer;
      },
      {
        scope: "plants:read",
        query: changesQuery,
        detail: {
          summary: "Follow changes to your plants",
          description:
            "Your change log, oldest first: every create, changing update and delete of your plants, each with its `seq`. " +
            "Poll with `after` (the `Link` header names the next page), or ask for `Accept: text/event-stream` to have " +
            "each change sent as it commits (Server-Sent Events; resume with `Last-Event-ID`). To mirror your plants: " +
            "take `Changes-Cursor` from `?limit=0`, list `GET /plants`, then follow from that cursor.",
          operationId: "listChanges",
          "x-parameters": [
            {
              name: "Last-Event-ID",
              in: "header",
              required: false,
              description: "With `Accept: text/event-stream`: the seq of the last change you have (wins over `after`)",
              schema: { type: "integer", format: "int64", minimum: 0 },
            },
          ],
          responses: {
            200: {
              description:
                "Your changes after `after`, oldest first; with `Accept: text/event-stream`, a stream of them",
              content: {
                ...modelResponse("", "Change", { array: true }).content,
                "text/event-stream": {
                  schema: { type: "string" as const },
                  example:
                    'id: 42\nevent: plant.created\ndata: {"seq":42,"type":"plant.created","timestamp":"2026-11-28T16:30:00.000Z","data":{"id":7,"name":"Fern"}}\n\n',
                },
              },
              headers: {
                "Changes-Cursor": {
                  description:
                    "The newest seq in your log (0 when it is empty): follow from it after listing your plants",
                  schema: { type: "integer" as const, format: "int64" },
                },
                ...linkHeader(
                  'The next page while more changes are there: `</plants/changes?after=42&limit=100>; rel="next"`',
                ),
              },
            },
            ...routeErrors({
              400: "`after`, `limit` or `Last-Event-ID` is out of its range, or a parameter is unknown (the message names it)",
              410: "The cursor is older than the oldest change kept (CHANGES_RETENTION_HOURS): list your plants again and follow from `Changes-Cursor`",
            }),
          },
        },
      },
    );
}
