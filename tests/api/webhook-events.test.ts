/**
 * Webhooks fed by the change log, over HTTP (SPEC, "Every change is an event": "Webhooks follow
 * the same log" and "Details"): `events` on POST /webhooks, shown by GET /webhooks; each delivery's
 * `type` in its log; and a real delivery: the change itself, signed, for an endpoint with events,
 * the interface's NewPlant for one without. The fan-out itself, on the stores, is in
 * tests/engines/webhook-fan-out.test.ts.
 */

import { afterEach, describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { parseJsonExact } from "../../src/http/json-body";
import { ENGINE, expectError, makeTestApp, type TestApp } from "../support/helpers";
import { until } from "../support/until";
import { type Receiver, startDispatcher, startReceiver } from "../support/webhook-receiver";

const MAX = "9223372036854775807";
const ALL = ["plant.created", "plant.updated", "plant.deleted"];

const running: Array<{ stop(): unknown }> = [];
afterEach(async () => {
  for (const thing of running.splice(0).reverse()) await thing.stop();
});

function receiver(): Receiver {
  const started = startReceiver();
  running.push(started);
  return started;
}

async function register(t: TestApp, token: string, body: Record<string, unknown>) {
  const response = await t.call("POST", "/webhooks", { token, json: body });
  expect(response.status).toBe(201);
  const made = (await response.json()) as { id: number; url: string; secret: string };
  expect(Object.keys(made).sort()).toEqual(["id", "secret", "url"]);
  return made;
}

type Delivery = { id: string; type: string; status: string };

async function deliveries(t: TestApp, token: string, id: number): Promise<Delivery[]> {
  const response = await t.call("GET", `/webhooks/${id}/deliveries`, { token });
  expect(response.status).toBe(200);
  return (await response.json()) as Delivery[];
}

/** A create, a changing update (PATCH), a no-op PATCH, a refused PUT and a delete of plant `id`. */
async function lifeOf(t: TestApp, token: string, id: string) {
  await t.createPlant(id, "Max", token);
  const patch = { token, json: { tag: "green" }, headers: { "content-type": "application/merge-patch+json" } };
  expect((await t.call("PATCH", `/plants/${id}`, patch)).status).toBe(200);
  expect((await t.call("PATCH", `/plants/${id}`, { token, json: {} })).status).toBe(200);
  const stale = { token, json: { name: "Other" }, headers: { "if-match": '"stale"' } };
  await expectError(await t.call("PUT", `/plants/${id}`, stale), 412);
  expect((await t.call("DELETE", `/plants/${id}`, { token })).status).toBe(204);
}

describe(`registering with events (${ENGINE})`, () => {
  test("POST /webhooks with events is 201; GET /webhooks shows them as given, and no events key for an endpoint without", async () => {
    const t = await makeTestApp({ webhookAllowPrivate: true });
    const alice = await t.tokenFor("alice");
    const some = await register(t, alice, {
      url: "http://127.0.0.1:9/some",
      events: ["plant.deleted", "plant.created"],
    });
    const all = await register(t, alice, { url: "http://127.0.0.1:9/all", events: ALL });
    const plain = await register(t, alice, { url: "http://127.0.0.1:9/plain" });
    const listed = await t.call("GET", "/webhooks", { token: alice });
    expect(listed.status).toBe(200);
    const endpoints = (await listed.json()) as Array<Record<string, unknown>>;
    expect(endpoints.map((e) => e.id)).toEqual([some.id, all.id, plain.id]);
    expect(endpoints.map((e) => Object.keys(e).sort())).toEqual([
      ["createdAt", "disabled", "events", "id", "url"],
      ["createdAt", "disabled", "events", "id", "url"],
      ["createdAt", "disabled", "id", "url"],
    ]);
    expect(endpoints.map((e) => e.events)).toEqual([["plant.deleted", "plant.created"], ALL, undefined]);
    // Another user sees none of them.
    expect(await (await t.call("GET", "/webhooks", { token: await t.tokenFor("bob") })).json()).toEqual([]);
  });

  test('"events" null, empty, unknown, repeated or not an array: 400 naming events, nothing registered', async () => {
    const t = await makeTestApp({ webhookAllowPrivate: true });
    const alice = await t.tokenFor("alice");
    for (const events of [
      "null",
      "[]",
      '["plant.nope"]',
      '["plant.created","plant.nope"]',
      '["plant.created","plant.created"]',
      '["plant.deleted","plant.updated","plant.deleted"]',
      '"plant.created"',
      "[1]",
      '{"0":"plant.created"}',
    ]) {
      const response = await t.call("POST", "/webhooks", {
        token: alice,
        json: `{"url":"http://127.0.0.1:9/hook","events":${events}}`,
      });
      const message = await expectError(response, 400);
      expect({ events, message }).toEqual({ events, message: expect.stringContaining("events") });
    }
    expect(await (await t.call("GET", "/webhooks", { token: alice })).json()).toEqual([]);
  });

  test("each delivery in the log shows its type: plant.created for an endpoint without events", async () => {
    const t = await makeTestApp({ webhookAllowPrivate: true });
    const alice = await t.tokenFor("alice");
    const all = await register(t, alice, { url: "http://127.0.0.1:9/all", events: ALL });
    const plain = await register(t, alice, { url: "http://127.0.0.1:9/plain" });
    const updates = await register(t, alice, { url: "http://127.0.0.1:9/updates", events: ["plant.updated"] });
    await lifeOf(t, alice, "1");
    await t.createPlant("2", "Moss", alice);

    const allLog = await deliveries(t, alice, all.id);
    expect(allLog.map((d) => Object.keys(d).sort())).toEqual(
      Array(4).fill(["attempts", "createdAt", "id", "lastStatus", "nextAttemptAt", "status", "type"]),
    );
    expect(allLog.map((d) => d.type)).toEqual(["plant.created", "plant.updated", "plant.deleted", "plant.created"]);
    expect(allLog.every((d) => d.status === "pending")).toBe(true);
    expect((await deliveries(t, alice, plain.id)).map((d) => d.type)).toEqual(["plant.created", "plant.created"]);
    expect((await deliveries(t, alice, updates.id)).map((d) => d.type)).toEqual(["plant.updated"]);
  });
});

describe(`a real delivery (${ENGINE})`, () => {
  test("an endpoint with every event receives created, updated, deleted in that order, each signed body its change; one without only the NewPlant", async () => {
    const hook = receiver();
    const t = await makeTestApp({ webhookAllowPrivate: true });
    const alice = await t.tokenFor("alice");
    const all = await register(t, alice, { url: hook.url("/all"), events: ALL });
    const plain = await register(t, alice, { url: hook.url("/plain") });
    await lifeOf(t, alice, MAX);
    // One attempt at a time per endpoint: the order they are first attempted in is the order they arrive.
    running.push(startDispatcher(t.stores, { ops: t.ops, fairness: { perEndpoint: 1 } }));
    await until(() => deliveries(t, alice, all.id), {
      holds: (log) => log.length === 3 && log.every((d) => d.status === "delivered"),
      what: "the three changes delivered",
    });
    await until(() => deliveries(t, alice, plain.id), {
      holds: (log) => log.length === 1 && log.every((d) => d.status === "delivered"),
      what: "the created plant delivered",
    });

    // The feed's changes, exact: each webhook body is one of them.
    const feed = await t.call("GET", "/plants/changes", { token: alice });
    expect(feed.status).toBe(200);
    const changes = parseJsonExact(await feed.text()) as Array<{ seq: number; type: string; data: { id: bigint } }>;
    expect(changes.map((change) => change.type)).toEqual(ALL);

    const got = hook.at("/all");
    expect(got).toHaveLength(3);
    const bodies = got.map((request) => parseJsonExact(request.body) as Record<string, unknown>);
    expect(bodies.map((body) => Object.keys(body))).toEqual(Array(3).fill(["seq", "type", "timestamp", "data"]));
    expect(bodies.map((body) => body.type)).toEqual(ALL);
    expect(bodies).toEqual(changes as unknown as Array<Record<string, unknown>>);
    expect(bodies.map((body) => body.seq)).toEqual(changes.map((change) => change.seq));
    expect(bodies.map((body) => (body.data as { id: bigint }).id)).toEqual(Array(3).fill(BigInt(MAX)));
    expect(got.map((request) => request.body)).toEqual([
      expect.stringContaining(`"data":{"id":${MAX},"name":"Max"}`),
      expect.stringContaining(`"data":{"id":${MAX},"name":"Max","tag":"green"}`),
      expect.stringContaining(`"data":{"id":${MAX},"name":"Max","tag":"green"}`),
    ]);
    // The log's ids are the webhook-ids, in the same order.
    expect((await deliveries(t, alice, all.id)).map((d) => d.id)).toEqual(
      got.map((request) => request.headers["webhook-id"] as string),
    );

    const plainGot = hook.at("/plain");
    expect(plainGot.map((request) => request.body)).toEqual([`{"id":${MAX},"name":"Max"}`]);
    expect((await deliveries(t, alice, plain.id)).map((d) => d.type)).toEqual(["plant.created"]);
    expect(hook.received).toHaveLength(4);

    for (const [requests, secret, other] of [
      [got, all.secret, plain.secret],
      [plainGot, plain.secret, all.secret],
    ] as const) {
      for (const request of requests) {
        expect(request.method).toBe("POST");
        expect(request.headers["content-type"]).toBe("application/json");
        expect(request.headers["webhook-id"]).toMatch(/^msg_[0-9a-f]{32}$/);
        expect(request.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
        expect(() => new Webhook(secret).verify(request.body, request.headers)).not.toThrow();
        expect(() => new Webhook(other).verify(request.body, request.headers)).toThrow();
      }
    }
  });
});
