import { andThen, type HotRead } from "../core/stores";
import { nextTurn } from "../core/timers";
import { JSON_CONTENT_TYPE, jsonHeaders } from "./errors";

/** One read of a list: how many items it holds, whether more follow, and its last item's cursor. */
export interface PageOf<Cursor> {
  count: number;
  more: boolean;
  last: Cursor | undefined;
}

/** What a list gives the pager: plants, webhook deliveries and changes page and stream alike. */
export interface PageReader<Cursor, Page extends PageOf<Cursor>> {
  /** The most one read returns: a longer answer is streamed a read at a time. */
  chunkSize: number;
  /** Up to `count` items after `after` (from the start when undefined), none past `upTo` where the list can tell. */
  read(after: Cursor | undefined, count: number, upTo?: Cursor): HotRead<Page>;
  /** The `count`-th item's cursor and whether more follow (undefined when fewer): by default found by reading. */
  end?(after: Cursor | undefined, count: number): Promise<{ cursor: Cursor; more: boolean } | undefined>;
  /** The page's items as a JSON array. */
  json(page: Page): string;
  /** The `Link` header naming the page after the one that ends at `last`. */
  link(last: Cursor): string;
}

export interface PageRequest<Cursor> {
  after: Cursor | undefined;
  /** Every item when undefined (no `Link` then). */
  limit: number | undefined;
  /** Where a fault goes once the answer has begun and can no longer become an Error body. */
  onFault: (error: unknown) => void;
}

/** A list's answer: one read when it fits a chunk; else its end first (for `Link`), then streamed a read per pull. */
export function pagedAnswer<C, P extends PageOf<C>>(
  reader: PageReader<C, P>,
  asked: PageRequest<C>,
  headers: Record<string, unknown>,
): HotRead<string | Response> {
  const { after, limit } = asked;
  if (limit === undefined || limit > reader.chunkSize) return longAnswer(reader, asked);
  return andThen(reader.read(after, limit), (page) => {
    headers["content-type"] = JSON_CONTENT_TYPE;
    // None for an empty page (`limit=0`): it would name itself.
    if (page.more && page.count > 0 && page.last !== undefined) headers.link = reader.link(page.last);
    return reader.json(page);
  });
}

async function pageEnd<C, P extends PageOf<C>>(reader: PageReader<C, P>, after: C | undefined, limit: number) {
  if (reader.end) return reader.end(after, limit);
  let cursor = after;
  let left = limit;
  for (;;) {
    const page = await reader.read(cursor, Math.min(left, reader.chunkSize));
    left -= page.count;
    cursor = page.last ?? cursor;
    if (left === 0 && cursor !== undefined) return { cursor, more: page.more };
    if (!page.more || page.count === 0) return undefined;
    await nextTurn();
  }
}

/** A chunk's JSON array turned into what follows: `[a,b` first, `,c,d` after, `]` only at the end. */
function piece(json: string, started: boolean, last: boolean): string {
  const items = json.slice(1, -1);
  const open = started ? (items === "" ? "" : ",") : "[";
  return `${open}${items}${last ? "]" : ""}`;
}

async function longAnswer<C, P extends PageOf<C>>(reader: PageReader<C, P>, { after, limit, onFault }: PageRequest<C>) {
  const end = limit === undefined ? undefined : await pageEnd(reader, after, limit);
  const headers = jsonHeaders(end?.more ? reader.link(end.cursor) : undefined);
  let remaining = limit ?? Number.POSITIVE_INFINITY;
  let page = await reader.read(after, Math.min(reader.chunkSize, remaining), end?.cursor);
  if (!page.more || page.count >= remaining) return new Response(reader.json(page), { headers });

  const encoder = new TextEncoder();
  let started = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (started) page = await reader.read(page.last, Math.min(reader.chunkSize, remaining), end?.cursor);
        remaining -= page.count;
        const last = !page.more || remaining <= 0 || page.count === 0;
        controller.enqueue(encoder.encode(piece(reader.json(page), started, last)));
        started = true;
        if (!last) return nextTurn();
        controller.close();
      } catch (error) {
        onFault(error);
        // Without a reason: Bun then resets the connection quietly; given one, it prints it too.
        controller.error();
      }
    },
  });
  return new Response(body, { headers });
}
