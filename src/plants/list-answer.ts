import type { Plant } from "../core/plant";
import { andThen, type HotRead, type PlantFilter, type PlantPage, type PlantStore } from "../core/stores";
import { nextTurn } from "../core/timers";
import { jsonHeaders } from "../http/errors";
import { type Fields, needsIds, pageJson } from "./fields";

const encoder = new TextEncoder();
const OPEN = 0x5b; // [
const COMMA = 0x2c;

/** Relative, built from the query alone (never from the Host header). */
export function nextLink(limit: number, lastId: bigint, tag: string | undefined, fields?: Fields): string {
  const tagPart = tag === undefined ? "" : `&tag=${encodeURIComponent(tag)}`;
  const fieldsPart = fields === undefined ? "" : `&fields=${fields.join(",")}`;
  return `</plants?limit=${limit}&after=${lastId}${tagPart}${fieldsPart}>; rel="next"`;
}

const chunkJson = (chunk: PlantPage, fields: Fields | undefined) =>
  fields === undefined ? JSON.stringify(chunk.plants) : pageJson(fields, chunk);

/** A chunk's JSON array turned in place into what follows: `[a,b` first, `,c,d` after, `]` only at the end. */
function piece(chunk: PlantPage, fields: Fields | undefined, started: boolean, last: boolean): Uint8Array {
  if (chunk.plants.length === 0) return encoder.encode(started ? "]" : "[]");
  const bytes = encoder.encode(chunkJson(chunk, fields));
  bytes[0] = started ? COMMA : OPEN;
  return last ? bytes : bytes.subarray(0, -1);
}

export interface ListRequest {
  ownerId: number;
  filter: PlantFilter;
  /** All that match when undefined. */
  limit: number | undefined;
  /** Where a fault goes once the answer has begun and can no longer become an Error body. */
  onFault: (error: unknown) => void;
  fields?: Fields;
}

type ShortList = ListRequest & { limit: number };
type Headers = { headers: Record<string, unknown> };

/** A page of at most one chunk (the hot path), its `next` link into `set`; with `fields`, the whole answer. */
export function shortPage(plants: PlantStore, asked: ShortList, set: Headers): HotRead<Plant[] | Response> {
  const page = plants.listPage(asked.ownerId, asked.filter, asked.limit, undefined, needsIds(asked.fields));
  return andThen(page, (read) => pageAnswer(read, asked, set));
}

function pageAnswer(page: PlantPage, { filter, limit, fields }: ShortList, set: Headers): Plant[] | Response {
  const link = page.more && page.lastId !== undefined ? nextLink(limit, page.lastId, filter.tag, fields) : undefined;
  if (fields !== undefined) return new Response(pageJson(fields, page), { headers: jsonHeaders(link) });
  if (link) set.headers.link = link;
  return page.plants;
}

/**
 * A list longer than one chunk, streamed a keyset step per pull. With a limit, the page's last plant
 * is found first, so the `next` link goes out with the status and no plant repeats on the next page.
 * A fault after the status aborts the stream (a cut-off body).
 */
export async function longList(plants: PlantStore, request: ListRequest): Promise<Plant[] | Response> {
  const { ownerId, filter, limit, fields } = request;
  const end = limit === undefined ? undefined : await plants.nthId(ownerId, filter, limit);
  const link = end?.more && limit !== undefined ? nextLink(limit, end.id, filter.tag, fields) : undefined;
  const first = await plants.listPage(
    ownerId,
    filter,
    Math.min(plants.listChunkSize, limit ?? Number.POSITIVE_INFINITY),
    end?.id,
    needsIds(fields),
  );
  return answer(plants, request, end?.id, link, first);
}

function answer(
  plants: PlantStore,
  { ownerId, filter, limit, onFault, fields }: ListRequest,
  upTo: bigint | undefined,
  link: string | undefined,
  first: PlantPage,
): Plant[] | Response {
  const chunkSize = plants.listChunkSize;
  let remaining = limit ?? Number.POSITIVE_INFINITY;
  let chunk = first;
  const headers = jsonHeaders(link);
  if (!chunk.more || chunk.plants.length === remaining) {
    if (fields === undefined && !link && upTo === undefined) return chunk.plants;
    return new Response(chunkJson(chunk, fields), { headers });
  }

  let started = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (started) {
          const asked = Math.min(chunkSize, remaining);
          chunk = await plants.listPage(ownerId, { ...filter, after: chunk.lastId }, asked, upTo, needsIds(fields));
        }
        remaining -= chunk.plants.length;
        const last = !chunk.more || remaining === 0;
        controller.enqueue(piece(chunk, fields, started, last));
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
