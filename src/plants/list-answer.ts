import type { Plant } from "../core/plant";
import type { PlantFilter, PlantPage, PlantStore } from "../core/stores";
import { type Fields, JSON_CONTENT_TYPE, needsIds, pageJson } from "./fields";

const encoder = new TextEncoder();
const OPEN = 0x5b; // [
const COMMA = 0x2c;

/**
 * The `next` link of a page: relative, built from the query alone (never from the Host
 * header), the tag percent-encoded, `fields` kept.
 */
export function nextLink(limit: number, lastId: bigint, tag: string | undefined, fields?: Fields): string {
  const tagPart = tag === undefined ? "" : `&tag=${encodeURIComponent(tag)}`;
  const fieldsPart = fields === undefined ? "" : `&fields=${fields.join(",")}`;
  return `</plants?limit=${limit}&after=${lastId}${tagPart}${fieldsPart}>; rel="next"`;
}

/** A chunk's plants as a JSON array: as they are, or with only the `fields` asked for. */
const chunkJson = (chunk: PlantPage, fields: Fields | undefined) =>
  fields === undefined ? JSON.stringify(chunk.plants) : pageJson(fields, chunk);

/**
 * One chunk of the answer's array: its plants' JSON array, turned in place into what follows
 * the answer so far: `[a,b` first, `,c,d` after, and the closing bracket only at the end.
 */
function piece(chunk: PlantPage, fields: Fields | undefined, started: boolean, last: boolean): Uint8Array {
  if (chunk.plants.length === 0) return encoder.encode(started ? "]" : "[]");
  const bytes = encoder.encode(chunkJson(chunk, fields));
  bytes[0] = started ? COMMA : OPEN;
  return last ? bytes : bytes.subarray(0, -1);
}

/**
 * Bun pulls again as soon as the socket takes the bytes, without going back to the event loop,
 * so without a turn between chunks a long list holds every other request until it is sent:
 * streamed that way, a list of 1,000,000 plants kept /healthz waiting 0.24 s, eight of them
 * 1.9 s; with the turn, 2.5 and 32 ms (`bun bench/big-list.ts`). setImmediate, because
 * setTimeout(0) waits at least 1 ms per chunk.
 */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export interface ListRequest {
  ownerId: number;
  filter: PlantFilter;
  /** At most this many plants; all that match when undefined. */
  limit: number | undefined;
  /** Where a fault goes once the answer has begun and can no longer become an Error body. */
  onFault: (error: unknown) => void;
  /** Only these fields of each plant (`fields`); each plant as it is when undefined. */
  fields?: Fields;
}

/**
 * A page of at most one chunk (the hot path): the plants, and the `next` link when more match
 * past them; with `fields`, the whole answer (its JSON written here).
 */
export async function shortPage(
  plants: PlantStore,
  { ownerId, filter, limit, fields }: ListRequest & { limit: number },
): Promise<{ plants: Plant[]; link?: string } | Response> {
  const page = await plants.listPage(ownerId, filter, limit, undefined, needsIds(fields));
  const link = page.more && page.lastId !== undefined ? nextLink(limit, page.lastId, filter.tag, fields) : undefined;
  if (fields === undefined) return { plants: page.plants, link };
  const headers: Record<string, string> = { "content-type": JSON_CONTENT_TYPE };
  if (link) headers.link = link;
  return new Response(pageJson(fields, page), { headers });
}

/**
 * A list that may be longer than one chunk: without a limit, or with one past a chunk. An
 * answer that fits in one chunk is the array itself. A longer one is a JSON array streamed chunk
 * by chunk: each pull reads one keyset step and sends it, so memory stays at a chunk or two
 * whatever the list's length, a slow reader holds back only its own answer (Bun pulls no further
 * while the socket is full), and other requests run between the chunks.
 *
 * With a limit, the page's last plant is found first (an index walk, with turns between its
 * steps) and the stream stops at it: the `next` link names it, so a plant deleted meanwhile
 * makes the page shorter, never makes the next page repeat one.
 *
 * The status is sent before the later chunks are read: a fault there goes to `onFault` once and
 * the stream is aborted, which the client sees as a cut-off body. A client that goes away
 * cancels the stream, and no further step is read.
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

/** The answer once its first chunk is read: the array itself, or a stream that reads the rest. */
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
  const headers: Record<string, string> = { "content-type": JSON_CONTENT_TYPE };
  if (link) headers.link = link;
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
