/**
 * A write load for real-process tests: loops creating plants through a set of server URLs in
 * turn, sorting every answer. Ids are unique per load and names are `p<id>`, so what a store
 * lists can be matched with what was acknowledged.
 */
import { expect } from "bun:test";

/** An answer slower than this is a hang. */
export const HANG_MS = 10_000;

/** The status of a GET, or -1 when there was no answer. */
export const statusOf = (url: string, init: RequestInit = {}) =>
  fetch(url, { ...init, signal: AbortSignal.timeout(HANG_MS) }).then(
    async (response) => {
      await response.arrayBuffer();
      return response.status;
    },
    () => -1,
  );

export type WriteLoad = ReturnType<typeof writeLoad>;

/**
 * Starts `workers` loops creating plants through `urls` in turn (the array may be changed while
 * it runs, e.g. to drop an instance that was killed) until `stop()`.
 */
export function writeLoad(urls: string[], token: string, { workers = 8, firstId = 1n } = {}) {
  const acknowledged: bigint[] = [];
  /** Answered 503 with the Error body and a Retry-After: nothing acknowledged. */
  const refused: bigint[] = [];
  /** No answer (the connection failed or was cut): stored or not, nobody was told. */
  const unanswered: bigint[] = [];
  /** Anything else: always a bug. */
  const wrong: string[] = [];
  let next = firstId;
  let running = true;
  const loops = Array.from({ length: workers }, async (_, worker) => {
    for (let i = worker; running; i++) {
      const id = next++;
      const url = urls[i % urls.length] as string;
      try {
        const response = await fetch(`${url}/plants`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: `{"id":${id},"name":"p${id}"}`,
          signal: AbortSignal.timeout(HANG_MS),
        });
        const body = (await response.json()) as { error?: number; message?: string; name?: string };
        if (response.status === 200 && body.name === `p${id}`) acknowledged.push(id);
        else if (response.status === 503 && body.error === 503 && response.headers.get("retry-after") !== null) {
          refused.push(id);
          // Real clients pause before a retry; so does this one, briefly.
          await Bun.sleep(20);
        } else wrong.push(`${response.status} ${JSON.stringify(body)} for ${id}`);
      } catch (error) {
        if ((error as Error).name === "TimeoutError") wrong.push(`no answer within ${HANG_MS} ms for ${id}`);
        else unanswered.push(id);
      }
    }
  });
  return {
    acknowledged,
    refused,
    unanswered,
    wrong,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** The ids of every `p<id>` plant the token's user has, read through `url`. */
export async function storedIds(url: string, token: string): Promise<Set<bigint>> {
  const response = await fetch(`${url}/plants?limit=1000000`, { headers: { authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  const text = await response.text();
  return new Set([...text.matchAll(/"name":"p(\d+)"/g)].map((m) => BigInt(m[1] as string)));
}
