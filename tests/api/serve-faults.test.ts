/**
 * The listener (src/server.ts) answers a promise the app let reject as the error handler
 * would. Elysia awaits a handler only when its reading of the handler's source says async; a
 * handler it misreads returns its rejection past Elysia's error handler, to Bun's, which
 * answers 500. From the start bundle that happened to GET /plants/{id} on PostgreSQL (a
 * missing plant got 500, caught by tests/postgres-server.test.ts through `bun run start`).
 * Here the real app's fetch is wrapped to reject the way that route's did.
 */
import { afterEach, expect, test } from "bun:test";
import type { App } from "../../src/app";
import { HttpError } from "../../src/http/errors";
import { serve } from "../../src/server";
import { makeTestApp } from "../support/helpers";

let stop: (() => void) | undefined;
afterEach(() => stop?.());

test("a promise the app let reject gets its Error body from the listener, and the server goes on", async () => {
  const { app, ops, logged } = await makeTestApp();
  // What the listener reads of the app: its fetch, its routes (for metrics) and its fault answer.
  const escaping = {
    routes: app.routes,
    answerFault: app.answerFault,
    fetch: (request: Request) =>
      new URL(request.url).pathname === "/escaped"
        ? Promise.reject(new HttpError(404, "id: you have no plant with this id"))
        : app.fetch(request),
  } as unknown as App;
  const running = serve(escaping, {
    port: 0,
    host: "127.0.0.1",
    idleTimeoutSeconds: 10,
    log: (message, detail) => logged.push({ message, detail }),
    access: () => {},
    ops,
  });
  stop = () => running.server.stop(true);
  const base = `http://127.0.0.1:${running.server.port}`;

  const response = await fetch(`${base}/escaped`);
  expect(response.status).toBe(404);
  expect(await response.json()).toEqual({ error: 404, message: "id: you have no plant with this id" });
  expect(logged).toEqual([]);
  expect(running.inFlight).toBe(0);
  expect((await fetch(`${base}/healthz`)).status).toBe(200);
});
