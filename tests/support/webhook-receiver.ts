import type { Server } from "bun";
import { type AppOps, createOps } from "../../src/app";
import type { ClaimedDelivery, ClaimRequest, Stores, WebhookStore } from "../../src/core/stores";
import type { Fairness } from "../../src/webhooks/claims";
import { createDispatcher, type Dispatcher } from "../../src/webhooks/dispatcher";
import { createFanOut } from "../../src/webhooks/fan-out";

/** One request a receiver got. */
export interface Received {
  path: string;
  method: string;
  body: string;
  headers: Record<string, string>;
  /** performance.now() when it arrived. */
  at: number;
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
  /** Requests neither answered nor given up by the sender, now and at most, by path. */
  const open = new Map<string, number>();
  const mostOpen = new Map<string, number>();
  const server: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      const now = (open.get(path) ?? 0) + 1;
      open.set(path, now);
      mostOpen.set(path, Math.max(now, mostOpen.get(path) ?? 0));
      let closed = false;
      const close = () => {
        if (!closed) open.set(path, (open.get(path) ?? 1) - 1);
        closed = true;
      };
      request.signal.addEventListener("abort", close, { once: true });
      const got: Received = {
        path,
        method: request.method,
        body: await request.text(),
        headers: Object.fromEntries(request.headers),
        at: performance.now(),
      };
      received.push(got);
      const reply = answer(got, received.filter((r) => r.path === got.path).length);
      if (reply instanceof Promise) {
        hanging++;
        return reply.finally(() => {
          hanging--;
          close();
        });
      }
      close();
      return reply;
    },
  });
  return {
    url: (path = "/hook") => `http://127.0.0.1:${server.port}${path}`,
    received,
    at: (path: string) => received.filter((r) => r.path === path),
    hanging: () => hanging,
    /** Requests open now (not answered, the sender still waiting), on `path` or on all paths. */
    open: (path?: string) => sum(open, path),
    /** The most requests that were open at once, on `path`, or on each path added up. */
    mostOpen: (path?: string) => sum(mostOpen, path),
    stop: () => server.stop(true),
  };
}

const sum = (counts: Map<string, number>, path: string | undefined) =>
  path === undefined ? [...counts.values()].reduce((a, b) => a + b, 0) : (counts.get(path) ?? 0);

export type Receiver = ReturnType<typeof startReceiver>;

/** A promise that never settles: a receiver that never answers. */
export const never = () => new Promise<Response>(() => {});

/** A dispatcher on a test app's stores, polling often, with short retries unless told otherwise. */
export function startDispatcher(
  stores: Stores,
  options: {
    retryDelaysMs?: number[];
    timeoutMs?: number;
    ops?: AppOps;
    fairness?: Partial<Fairness>;
    /** The dispatcher's clock (its budget and attempt times); the store keeps its own. */
    clock?: () => number;
    /** In place of the stores' own, to watch or fail its calls. */
    store?: WebhookStore;
  } = {},
): Dispatcher {
  const dispatcher = createDispatcher({
    store: options.store ?? stores.webhooks,
    fanOut: createFanOut(stores.webhooks, stores.changes),
    retryDelaysMs: options.retryDelaysMs ?? [50, 50],
    allowPrivate: true,
    log: () => {},
    metrics: (options.ops ?? createOps(stores)).metrics,
    pollMs: 50,
    timeoutMs: options.timeoutMs,
    fairness: options.fairness,
    pendingEveryMs: 0,
    clock: options.clock,
  });
  dispatcher.start();
  return dispatcher;
}

/**
 * A claimer as one dispatcher claims (ClaimRequest's `held`): it goes on past the first attempts it
 * has claimed, which an endpoint's next claim would otherwise wait for.
 */
export function claimer(store: Pick<WebhookStore, "claimDue">) {
  const held = new Map<number, number>();
  return async (request: Omit<ClaimRequest, "held">): Promise<ClaimedDelivery[]> => {
    const batch = await store.claimDue({ ...request, held });
    for (const d of batch) if (d.attempts === 0) held.set(d.webhookId, Math.max(d.seq, held.get(d.webhookId) ?? 0));
    return batch;
  };
}
