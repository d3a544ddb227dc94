import type { Plant } from "./model";
import type { PlantQueries } from "./queries";

/** The list route's content type, as Elysia writes it for an array. */
const JSON_HEADERS = { "content-type": "application/json;charset=utf-8" };

const encoder = new TextEncoder();
const OPEN = 0x5b; // [
const COMMA = 0x2c;

/**
 * One chunk of the answer's array: its plants' JSON array, turned in place into what follows
 * the answer so far: `[a,b` first, `,c,d` after, and the closing bracket only at the end.
 */
function piece(plants: Plant[], started: boolean, last: boolean): Uint8Array {
  if (plants.length === 0) return encoder.encode(started ? "]" : "[]");
  const bytes = encoder.encode(JSON.stringify(plants));
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

/**
 * The owner's plants by id, at most `limit` of them (all when undefined), as the list route
 * answers them. An answer that fits in one chunk is the array itself, answered at once as
 * before. A longer one is a JSON array streamed chunk by chunk: each pull reads one keyset
 * step and sends it, so memory stays at a chunk or two whatever the list's length, a slow
 * reader holds back only its own answer (Bun pulls no further while the socket is full), and
 * other requests run between the chunks.
 *
 * The status is sent before the later chunks are read: a fault there can no longer become an
 * Error body, so it goes to `onFault` once and the stream is aborted, which the client sees
 * as a cut-off body. A client that goes away cancels the stream, and no further step is read.
 */
export function listAnswer(
  plants: PlantQueries,
  ownerId: number,
  limit: number | undefined,
  onFault: (error: unknown) => void,
): Plant[] | Response {
  const chunkSize = plants.listChunkSize;
  let remaining = limit ?? Number.POSITIVE_INFINITY;
  let asked = Math.min(chunkSize, remaining);
  let chunk = plants.listPlantsAfter(ownerId, undefined, asked);
  if (chunk.plants.length < asked || chunk.plants.length === remaining) return chunk.plants;

  let started = false;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      try {
        if (started) {
          asked = Math.min(chunkSize, remaining);
          chunk = plants.listPlantsAfter(ownerId, chunk.lastId, asked);
        }
        remaining -= chunk.plants.length;
        const last = chunk.plants.length < asked || remaining === 0;
        controller.enqueue(piece(chunk.plants, started, last));
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
  return new Response(body, { headers: JSON_HEADERS });
}
