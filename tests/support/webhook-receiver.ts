import type { Server } from "bun";
import { type AppOps, createOps } from "../../src/app";
import type { Stores } from "../../src/core/stores";
import { createDispatcher, type Dispatcher } from "../../src/webhooks/dispatcher";

/** One request a receiver got. */
export interface Received {
  path: string;
  method: string;
  body: string;
  headers: Record<string, string>;
}

/**
 * A webhook receiver on 127.0.0.1: records every request, and answers with what `answer` says
 * for it (a Response, or a promise that never settles to hang). Paths tell endpoints apart.
 */
export function startReceiver(
  answer: (request: Received, nth: number) => Response | Promise<Response> = () => new Response("ok"),
) {
  const received: Received[] = [];
  let hanging = 0;
  const server: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const got: Received = {
        path: new URL(request.url).pathname,
        method: request.method,
        body: await request.text(),
        headers: Object.fromEntries(request.headers),
      };
      received.push(got);
      const reply = answer(got, received.filter((r) => r.path === got.path).length);
      if (reply instanceof Promise) {
        hanging++;
        return reply.finally(() => hanging--);
      }
      return reply;
    },
  });
  return {
    url: (path = "/hook") => `http://127.0.0.1:${server.port}${path}`,
    received,
    at: (path: string) => received.filter((r) => r.path === path),
    hanging: () => hanging,
    stop: () => server.stop(true),
  };
}

export type Receiver = ReturnType<typeof startReceiver>;

/** A promise that never settles: a receiver that never answers. */
export const never = () => new Promise<Response>(() => {});

/** A dispatcher on a test app's stores, polling often, with short retries unless told otherwise. */
export function startDispatcher(
  stores: Stores,
  options: { retryDelaysMs?: number[]; timeoutMs?: number; ops?: AppOps } = {},
): Dispatcher {
  const dispatcher = createDispatcher({
    store: stores.webhooks,
    retryDelaysMs: options.retryDelaysMs ?? [50, 50],
    allowPrivate: true,
    log: () => {},
    metrics: (options.ops ?? createOps(stores)).metrics,
    pollMs: 50,
    timeoutMs: options.timeoutMs,
    pendingEveryMs: 0,
  });
  dispatcher.start();
  return dispatcher;
}
