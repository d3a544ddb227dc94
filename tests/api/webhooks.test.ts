import { afterEach, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { Webhook } from "standardwebhooks";
import { StoreUnavailable } from "../../src/core/failures";
import type { ClaimRequest } from "../../src/core/stores";
import { parseJsonExact } from "../../src/http/json-body";
import type { Fairness } from "../../src/webhooks/claims";
import { createDispatcher } from "../../src/webhooks/dispatcher";
import { createFanOut } from "../../src/webhooks/fan-out";
import { CLAIMED_AHEAD, PER_ENDPOINT } from "../../src/webhooks/rules";
import { ENGINE, expectError, makeTestApp, onPostgres, type TestApp } from "../support/helpers";
import { until } from "../support/until";
import {
  claimer,
  never,
  type Received,
  type Receiver,
  startDispatcher,
  startReceiver,
} from "../support/webhook-receiver";

const MAX = "9223372036854775807";
const MIN = "-9223372036854775808";

const running: Array<{ stop(): unknown }> = [];
afterEach(async () => {
  for (const thing of running.splice(0).reverse()) await thing.stop();
});

function receiver(...args: Parameters<typeof startReceiver>): Receiver {
  const started = startReceiver(...args);
  running.push(started);
  return started;
}

/** A test app with a dispatcher on its stores, woken by their changes as src/index.ts wakes it. */
async function appWithDispatcher(
  options: { retryDelaysMs?: number[]; timeoutMs?: number; fairness?: Partial<Fairness> } = {},
) {
  const t = await makeTestApp({ webhookAllowPrivate: true });
  const dispatcher = startDispatcher(t.stores, { ...options, ops: t.ops });
  running.push(dispatcher);
  const stopWaking = await t.stores.changes.watch(dispatcher.wake);
  running.push({ stop: stopWaking });
  return { ...t, dispatcher };
}

async function register(t: TestApp, token: string, url: string) {
  const response = await t.call("POST", "/webhooks", { token, json: { url } });
  expect(response.status).toBe(201);
  return (await response.json()) as { id: number; url: string; secret: string };
}

type Delivery = {
  id: string;
  status: string;
  attempts: number;
  lastStatus: number | null;
  createdAt: string;
  nextAttemptAt: string | null;
};

async function deliveries(t: TestApp, token: string, id: number, query = ""): Promise<Delivery[]> {
  const response = await t.call("GET", `/webhooks/${id}/deliveries${query}`, { token });
  expect(response.status).toBe(200);
  return (await response.json()) as Delivery[];
}

/** Polls the log until every delivery has left `pending` (or 10 s pass). */
/** The plant ids of the requests' first attempts (a delivery's first request), in the order they came. */
function firstAttempts(requests: Received[]): number[] {
  const seen = new Set<string>();
  return requests.flatMap((request) => {
    const id = request.headers["webhook-id"] as string;
    if (seen.has(id)) return [];
    seen.add(id);
    return [Number((parseJsonExact(request.body) as { id: number }).id)];
  });
}

const settled = (t: TestApp, token: string, id: number, count: number) =>
  until(() => deliveries(t, token, id), {
    holds: (list) => list.length === count && list.every((d) => d.status !== "pending"),
    timeoutMs: 10_000,
  });

describe(`webhook endpoints (${ENGINE})`, () => {
  test("register shows the secret once; list never does; delete is 204 then 404; others' are 404", async () => {
    const t = await makeTestApp({ webhookAllowPrivate: true });
    const alice = await t.tokenFor("alice");
    const bob = await t.tokenFor("bob");
    const made = await register(t, alice, "http://127.0.0.1:9/hook?x=1");
    expect(Object.keys(made).sort()).toEqual(["id", "secret", "url"]);
    expect(made.url).toBe("http://127.0.0.1:9/hook?x=1");
    expect(made.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(made.secret.slice(6), "base64")).toHaveLength(32);

    const listed = await t.call("GET", "/webhooks", { token: alice });
    const endpoints = (await listed.json()) as Array<Record<string, unknown>>;
    expect(endpoints).toHaveLength(1);
    expect(Object.keys(endpoints[0] as object).sort()).toEqual(["createdAt", "disabled", "id", "url"]);
    expect(endpoints[0]).toMatchObject({ id: made.id, url: made.url, disabled: false });
    expect(endpoints[0]?.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(JSON.stringify(endpoints)).not.toContain(made.secret.slice(6));

    expect(await (await t.call("GET", "/webhooks", { token: bob })).json()).toEqual([]);
    await expectError(await t.call("DELETE", `/webhooks/${made.id}`, { token: bob }), 404);
    await expectError(await t.call("GET", `/webhooks/${made.id}/deliveries`, { token: bob }), 404);
    expect((await t.call("DELETE", `/webhooks/${made.id}`, { token: alice })).status).toBe(204);
    await expectError(await t.call("DELETE", `/webhooks/${made.id}`, { token: alice }), 404);
    expect(await (await t.call("GET", "/webhooks", { token: alice })).json()).toEqual([]);
    await expectError(await t.call("GET", "/webhooks", {}), 401);
  });

  test("the routes answer like the plant routes: 405 with Allow, 415 and 413 on the body, nothing stored", async () => {
    const t = await makeTestApp({ webhookAllowPrivate: true, bodyLimitBytes: 1024 });
    const alice = await t.tokenFor("alice");
    const put = await t.call("PUT", "/webhooks", { token: alice, json: { url: "http://127.0.0.1:9/" } });
    await expectError(put, 405);
    expect(put.headers.get("allow")).toBe("GET, POST");
    const patch = await t.call("PATCH", "/webhooks/1/deliveries", { token: alice });
    await expectError(patch, 405);
    expect(patch.headers.get("allow")).toBe("GET");
    const text = { token: alice, body: '{"url":"http://127.0.0.1:9/"}', headers: { "content-type": "text/plain" } };
    await expectError(await t.call("POST", "/webhooks", text), 415);
    const huge = { token: alice, json: { url: `http://127.0.0.1:9/${"a".repeat(2000)}` } };
    await expectError(await t.call("POST", "/webhooks", huge), 413);
    await expectError(await t.call("POST", "/webhooks", { token: alice, json: "{not json" }), 400);
    expect(await (await t.call("GET", "/webhooks", { token: alice })).json()).toEqual([]);
  });

  test("at most 10 endpoints per user: the 11th is 409, and a delete makes room", async () => {
    const t = await makeTestApp({ webhookAllowPrivate: true });
    const alice = await t.tokenFor("alice");
    const ids: number[] = [];
    for (let i = 0; i < 10; i++) ids.push((await register(t, alice, `http://127.0.0.1:9/${i}`)).id);
    expect(
      await expectError(
        await t.call("POST", "/webhooks", { token: alice, json: { url: "http://127.0.0.1:9/x" } }),
        409,
      ),
    ).toMatch(/10 webhook endpoints/);
    await register(t, await t.tokenFor("bob"), "http://127.0.0.1:9/bob");
    expect((await t.call("DELETE", `/webhooks/${ids[3]}`, { token: alice })).status).toBe(204);
    await register(t, alice, "http://127.0.0.1:9/again");
  });

  test("bad URLs are 400 naming the rule; non-public addresses are 400 unless WEBHOOK_ALLOW_PRIVATE", async () => {
    const strict = await makeTestApp({ webhookAllowPrivate: false });
    const lax = await makeTestApp({ webhookAllowPrivate: true });
    const post = (t: TestApp, token: string, body: unknown) => t.call("POST", "/webhooks", { token, json: body });
    const s = await strict.tokenFor("alice");
    const l = await lax.tokenFor("alice");
    for (const [url, rule] of [
      ["not a url", /absolute http or https/],
      ["/relative/path", /absolute http or https/],
      ["ftp://example.com/x", /absolute http or https/],
      ["javascript:alert(1)", /absolute http or https/],
      ["http://user:pw@example.com/", /credentials/],
      ["https://user@example.com/", /credentials/],
    ] as const) {
      expect(await expectError(await post(strict, s, { url }), 400)).toMatch(rule);
      expect(await expectError(await post(lax, l, { url }), 400)).toMatch(rule);
    }
    for (const url of [
      "http://127.0.0.1/",
      "http://localhost:8080/",
      "http://169.254.169.254/latest/meta-data",
      "http://10.1.2.3/",
      "http://[::1]/",
      "http://[::ffff:127.0.0.1]/",
      "http://[fd00::1]/",
      "http://0.0.0.0/",
    ]) {
      expect(await expectError(await post(strict, s, { url }), 400)).toMatch(
        /^url: .*not a public address \(.*WEBHOOK_ALLOW_PRIVATE=true\)$/,
      );
    }
    const unknown = await expectError(await post(strict, s, { url: "http://secret-internal-name.invalid/" }), 400);
    expect(unknown).toMatch(/^url: its host does not resolve/);
    // What was sent is never echoed: a private name or address stays out of the answer.
    expect(unknown).not.toContain("secret-internal-name");
    expect(await expectError(await post(strict, s, { url: "http://10.1.2.3/" }), 400)).not.toContain("10.1.2.3");
    expect((await post(lax, l, { url: "http://localhost:8080/" })).status).toBe(201);
    await expectError(await post(strict, s, { url: "" }), 400);
    await expectError(await post(strict, s, { url: `http://example.com/${"a".repeat(2100)}` }), 400);
    await expectError(await post(strict, s, { nope: 1 }), 400);
    expect(await (await strict.call("GET", "/webhooks", { token: s })).json()).toEqual([]);
  });
});

describe(`webhook deliveries (${ENGINE})`, () => {
  test("one signed delivery per created plant per endpoint, exact int64 body; none for a 409, none across users", async () => {
    const hook = receiver();
    const t = await appWithDispatcher();
    const alice = await t.tokenFor("alice");
    const bob = await t.tokenFor("bob");
    const a1 = await register(t, alice, hook.url("/a1"));
    const a2 = await register(t, alice, hook.url("/a2"));
    const b1 = await register(t, bob, hook.url("/b1"));
    await t.createPlant(MAX, "Max", alice);
    const tagged = await t.call("POST", "/plants", {
      token: alice,
      json: `{"id":${MIN},"name":"Min \\"quoted\\" é","tag":"t\\u0001"}`,
    });
    expect(tagged.status).toBe(200);
    expect((await t.call("POST", "/plants", { token: alice, json: `{"id":${MAX},"name":"again"}` })).status).toBe(409);
    await t.createPlant("7", "Bob's", bob);

    const a1Log = await settled(t, alice, a1.id, 2);
    await settled(t, alice, a2.id, 2);
    await settled(t, bob, b1.id, 1);
    expect(a1Log.map((d) => [d.status, d.attempts, d.lastStatus, d.nextAttemptAt])).toEqual([
      ["delivered", 1, 200, null],
      ["delivered", 1, 200, null],
    ]);

    const bodies = (path: string) => hook.at(path).map((r) => r.body);
    const expected = [`{"id":${MAX},"name":"Max"}`, `{"id":${MIN},"name":"Min \\"quoted\\" é","tag":"t\\u0001"}`];
    expect(bodies("/a1")).toEqual(expected);
    expect(bodies("/a2")).toEqual(expected);
    expect(bodies("/b1")).toEqual(['{"id":7,"name":"Bob\'s"}']);
    expect(hook.received).toHaveLength(5);
    // The body's id is exact past 2^53 (JSON.parse would round it).
    expect((parseJsonExact(bodies("/a1")[0] as string) as { id: bigint }).id).toBe(BigInt(MAX));

    for (const [path, secret] of [
      ["/a1", a1.secret],
      ["/a2", a2.secret],
      ["/b1", b1.secret],
    ] as const) {
      for (const got of hook.at(path)) {
        expect(got.method).toBe("POST");
        expect(got.headers["content-type"]).toBe("application/json");
        expect(got.headers["webhook-id"]).toMatch(/^msg_[0-9a-f]{32}$/);
        expect(Number(got.headers["webhook-timestamp"])).toBeCloseTo(Date.now() / 1000, -2);
        expect(() => new Webhook(secret).verify(got.body, got.headers)).not.toThrow();
        expect(() => new Webhook(b1.secret === secret ? a1.secret : b1.secret).verify(got.body, got.headers)).toThrow();
      }
    }
    // The log's ids are the webhook-ids, in creation order.
    expect(a1Log.map((d) => d.id)).toEqual(hook.at("/a1").map((r) => r.headers["webhook-id"] as string));
  });

  test("a receiver that fails twice then succeeds sees the same webhook-id three times", async () => {
    const hook = receiver((_request, nth) => new Response("no", { status: nth <= 2 ? 503 : 204 }));
    const t = await appWithDispatcher({ retryDelaysMs: [50, 50] });
    const alice = await t.tokenFor("alice");
    const endpoint = await register(t, alice, hook.url());
    await t.createPlant("1", "Fern", alice);
    const [delivery] = await settled(t, alice, endpoint.id, 1);
    expect(delivery).toMatchObject({ status: "delivered", attempts: 3, lastStatus: 204, nextAttemptAt: null });
    const ids = hook.received.map((r) => r.headers["webhook-id"]);
    expect(ids).toEqual([delivery?.id, delivery?.id, delivery?.id]);
    // Each attempt is signed with its own timestamp, and each signature verifies.
    for (const got of hook.received)
      expect(() => new Webhook(endpoint.secret).verify(got.body, got.headers)).not.toThrow();
  });

  test("after the last retry a delivery is failed, with nextAttemptAt null; a pending one shows when it is next tried", async () => {
    const hook = receiver(() => new Response("down", { status: 500 }));
    const t = await appWithDispatcher({ retryDelaysMs: [50, 60_000] });
    const alice = await t.tokenFor("alice");
    const endpoint = await register(t, alice, hook.url());
    await t.createPlant("1", "Fern", alice);
    const [waiting] = await until(() => deliveries(t, alice, endpoint.id), {
      holds: (list) => list[0]?.attempts === 2,
      timeoutMs: 10_000,
    });
    expect(waiting).toMatchObject({ status: "pending", attempts: 2, lastStatus: 500 });
    const next = Date.parse(waiting?.nextAttemptAt as string) - Date.now();
    expect(next).toBeGreaterThan(40_000); // 60 s ± 10 % jitter, less the time since
    expect(next).toBeLessThan(67_000);

    const t2 = await appWithDispatcher({ retryDelaysMs: [] });
    const bob = await t2.tokenFor("bob");
    const other = await register(t2, bob, hook.url("/other"));
    await t2.createPlant("1", "Fern", bob);
    expect(await settled(t2, bob, other.id, 1)).toMatchObject([
      { status: "failed", attempts: 1, lastStatus: 500, nextAttemptAt: null },
    ]);
  });

  test("a redirect is not followed: it is a failed attempt with its 3xx status", async () => {
    const target = receiver();
    const hook = receiver(() => new Response(null, { status: 302, headers: { location: target.url("/elsewhere") } }));
    const t = await appWithDispatcher({ retryDelaysMs: [50] });
    const alice = await t.tokenFor("alice");
    const endpoint = await register(t, alice, hook.url());
    await t.createPlant("1", "Fern", alice);
    expect(await settled(t, alice, endpoint.id, 1)).toMatchObject([
      { status: "failed", attempts: 2, lastStatus: 302, nextAttemptAt: null },
    ]);
    expect(hook.received).toHaveLength(2);
    expect(target.received).toHaveLength(0);
  });

  test("410 fails the delivery without retry and disables the endpoint; nothing more is sent to it", async () => {
    const hook = receiver((request) => new Response("gone", { status: request.path === "/gone" ? 410 : 200 }));
    const t = await appWithDispatcher({ retryDelaysMs: [50, 50] });
    const alice = await t.tokenFor("alice");
    const gone = await register(t, alice, hook.url("/gone"));
    const live = await register(t, alice, hook.url("/live"));
    await t.createPlant("1", "Fern", alice);
    expect(await settled(t, alice, gone.id, 1)).toMatchObject([{ status: "failed", attempts: 1, lastStatus: 410 }]);
    const listed = (await (await t.call("GET", "/webhooks", { token: alice })).json()) as Array<{
      id: number;
      disabled: boolean;
    }>;
    expect(listed.map((e) => [e.id, e.disabled])).toEqual([
      [gone.id, true],
      [live.id, false],
    ]);
    await t.createPlant("2", "Moss", alice);
    await settled(t, alice, live.id, 2);
    expect(await deliveries(t, alice, gone.id)).toHaveLength(1);
    expect(hook.at("/gone")).toHaveLength(1);
    expect(hook.at("/live")).toHaveLength(2);
  });

  test("a receiver that never answers: its attempts time out, at most PER_ENDPOINT at once, and the API answers meanwhile", async () => {
    const hook = receiver(never);
    // No circuit here (it is tested below): every delivery gets its attempt.
    const fairness = { circuit: { failures: 1_000, restMs: 0 } };
    const t = await appWithDispatcher({ retryDelaysMs: [], timeoutMs: 300, fairness });
    const alice = await t.tokenFor("alice");
    const endpoint = await register(t, alice, hook.url());
    for (let i = 1; i <= 20; i++) await t.createPlant(String(i), `p${i}`, alice);
    await until(async () => hook.open(), { holds: (n) => n === PER_ENDPOINT, timeoutMs: 10_000 });
    // While attempts hang, requests are answered (bench/webhook-hang.ts measures how fast).
    expect((await t.call("GET", "/plants?limit=5", { token: alice })).status).toBe(200);
    const log = await settled(t, alice, endpoint.id, 20);
    expect(log.every((d) => d.status === "failed" && d.lastStatus === null)).toBe(true);
    expect(hook.received).toHaveLength(20);
    expect(hook.mostOpen()).toBe(PER_ENDPOINT);
  });

  test("deleting an endpoint drops its pending deliveries: nothing more is sent", async () => {
    const hook = receiver(() => new Response("down", { status: 500 }));
    const t = await appWithDispatcher({ retryDelaysMs: [60_000] });
    const alice = await t.tokenFor("alice");
    const endpoint = await register(t, alice, hook.url());
    await t.createPlant("1", "Fern", alice);
    await until(() => deliveries(t, alice, endpoint.id), {
      holds: (list) => list[0]?.attempts === 1,
      timeoutMs: 10_000,
    });
    expect((await t.call("DELETE", `/webhooks/${endpoint.id}`, { token: alice })).status).toBe(204);
    expect(await t.stores.webhooks.pendingCount()).toBe(0);
    expect(hook.received).toHaveLength(1);
  });
});

describe(`fair delivery (${ENGINE})`, () => {
  test("one user's 10 hanging endpoints and 300 queued deliveries: another user's delivery still arrives within 2 s", async () => {
    const hook = receiver((request) => (request.path.startsWith("/a") ? never() : new Response("ok")));
    const t = await appWithDispatcher({ retryDelaysMs: [] });
    const alice = await t.tokenFor("alice");
    const bob = await t.tokenFor("bob");
    for (let i = 0; i < 10; i++) await register(t, alice, hook.url(`/a${i}`));
    const bobs = await register(t, bob, hook.url("/b"));
    for (let i = 1; i <= 30; i++) await t.createPlant(String(i), `p${i}`, alice);
    // Every endpoint of alice's holds its PER_ENDPOINT slots, hanging for the whole 10 s attempt.
    await until(async () => hook.open(), { holds: (n) => n === 10 * PER_ENDPOINT, timeoutMs: 10_000 });
    const sent = performance.now();
    await t.createPlant("1", "Fern", bob);
    const [got] = await until(async () => hook.at("/b"), { holds: (list) => list.length === 1, timeoutMs: 10_000 });
    expect((got?.at ?? Number.POSITIVE_INFINITY) - sent).toBeLessThan(2_000);
    expect(await settled(t, bob, bobs.id, 1)).toMatchObject([{ status: "delivered", attempts: 1 }]);
    for (let i = 0; i < 10; i++) expect(hook.mostOpen(`/a${i}`)).toBe(PER_ENDPOINT);
    // Closing the receiver ends the hanging attempts, so the dispatcher stops at once.
    hook.stop();
  });

  test("a claim takes owners in turn, then their endpoints, however old one owner's backlog", async () => {
    const t = await makeTestApp({ webhookAllowPrivate: true });
    const alice = await t.tokenFor("alice");
    const bob = await t.tokenFor("bob");
    const alices: number[] = [];
    for (let i = 0; i < 3; i++) alices.push((await register(t, alice, `http://127.0.0.1:9/a${i}`)).id);
    const [a0, a1, a2] = alices as [number, number, number];
    const bobs = await register(t, bob, "http://127.0.0.1:9/b");
    for (let i = 1; i <= 5; i++) await t.createPlant(String(i), `p${i}`, alice);
    await t.createPlant("1", "Fern", bob);
    // a2 has an attempt in flight already; `busy` is what the dispatcher has in flight.
    const busy = new Map([[a2, 1]]);
    await createFanOut(t.stores.webhooks, t.stores.changes).due(5);
    const claimAs = claimer(t.stores.webhooks);
    const claim = (count: number) =>
      claimAs({
        count,
        leaseMs: 60_000,
        perEndpoint: 2,
        busy,
        circuit: { failures: 5, restMs: 30_000 },
      });
    // Bob's one delivery, the newest of all, comes in the first turn, with alice's oldest.
    const first = await claim(2);
    expect(first.map((d) => d.webhookId).sort()).toEqual([a0, bobs.id].sort());
    busy.set(a0, 1);
    // Then alice's endpoints up to 2 attempts each, those in flight counted.
    const rest = await claim(100);
    const perEndpoint = (id: number) => rest.filter((d) => d.webhookId === id).length;
    expect([perEndpoint(a0), perEndpoint(a1), perEndpoint(a2)]).toEqual([1, 2, 1]);
    // With every endpoint's 2 in flight, nothing more, though alice has deliveries due.
    for (const endpoint of alices) busy.set(endpoint, 2);
    expect(await claim(100)).toEqual([]);
  });

  test("deliveries let go of go back before newer ones: an endpoint's first attempts stay in seq order", async () => {
    let now = 1_800_000_000_000;
    const t = await makeTestApp({ webhookAllowPrivate: true, now: () => now });
    const alice = await t.tokenFor("alice");
    const hook = await register(t, alice, "http://127.0.0.1:9/a");
    for (let i = 1; i <= 6; i++) await t.createPlant(String(i), `p${i}`, alice);
    await createFanOut(t.stores.webhooks, t.stores.changes).due(5);
    const claim = () =>
      t.stores.webhooks.claimDue({
        count: 100,
        leaseMs: 60_000,
        perEndpoint: 3,
        busy: new Map(),
        circuit: { failures: 5, restMs: 30_000 },
      });
    const seqsOf = (batch: Array<{ seq: number }>) => batch.map((d) => d.seq).sort((a, b) => a - b);
    const first = seqsOf(await claim());
    expect(first).toHaveLength(3);
    // Let go of later than the newer ones were made due (SQLite's clock is the app's).
    now += 5_000;
    await t.stores.webhooks.release(first);
    expect(seqsOf(await claim())).toEqual(first);
    const log = await deliveries(t, alice, hook.id);
    expect(log.filter((d) => d.status === "pending")).toHaveLength(6);
  });

  test("a retry recorded between two releases does not put the later release ahead of the earlier", async () => {
    // In the past for the database's clock too: every time below is due.
    const t0 = Date.now() - 60_000;
    let now = t0;
    const t = await makeTestApp({ webhookAllowPrivate: true, now: () => now });
    const alice = await t.tokenFor("alice");
    await register(t, alice, "http://127.0.0.1:9/a");
    const fanOut = createFanOut(t.stores.webhooks, t.stores.changes);
    const store = t.stores.webhooks;
    const circuit = { failures: 5, restMs: 30_000 };
    let claimAs = claimer(store);
    const claim = async (count: number) =>
      (await claimAs({ count, leaseMs: 20_000, perEndpoint: 64, busy: new Map(), circuit }))
        .map((d) => d.seq)
        .sort((a, b) => a - b);
    const fail = (deliverySeq: number, retryInMs: number) =>
      store.recordAttempt({
        deliverySeq,
        attempt: 1,
        at: t0,
        statusCode: 500,
        durationMs: 10,
        error: undefined,
        outcome: "pending",
        retryInMs,
      });
    for (let i = 1; i <= 5; i++) await t.createPlant(String(i), `p${i}`, alice);
    await fanOut.due(5);
    const [s1 = 0, s2 = 0, ...waiting] = await claim(10);
    // A claim under way takes the newer 6-8; meanwhile 1 fails and lets 3-5 go.
    now = t0 + 3_000;
    for (let i = 6; i <= 8; i++) await t.createPlant(String(i), `p${i}`, alice);
    await fanOut.due(5);
    const newer = await claim(10);
    await fail(s1, 1_100);
    await store.release(waiting);
    // 2 fails too, its retry due before 1's; then what the claim took is let go of after 3-5.
    await fail(s2, 900);
    await store.release(newer);
    // Everything it held is let go of: a dispatcher holds nothing of this endpoint now.
    claimAs = claimer(store);
    now = t0 + 3_500;
    const order: number[] = [];
    for (let i = 0; i < 8; i++) order.push(...(await claim(1)));
    expect({ order, waiting, newer }).toEqual({ order: [s2, s1, ...waiting, ...newer], waiting, newer });
  });

  test("an attempt that fails lets go of the endpoint's claimed deliveries; every first attempt still goes in seq order", async () => {
    const { promise: allMade, resolve: madeAll } = Promise.withResolvers<void>();
    // The first attempt is held until every plant is made, then fails: its endpoint's other claims go back.
    const hook = receiver((_request, nth) =>
      nth === 1 ? allMade.then(() => new Response("x", { status: 500 })) : new Response("ok"),
    );
    const t = await appWithDispatcher({ retryDelaysMs: [20], fairness: { perEndpoint: 1 } });
    const alice = await t.tokenFor("alice");
    const endpoint = await register(t, alice, hook.url("/a"));
    const count = 2 * CLAIMED_AHEAD;
    for (let i = 1; i <= count; i++) await t.createPlant(String(i), `p${i}`, alice);
    await until(async () => (await deliveries(t, alice, endpoint.id)).length, { holds: (n) => n === count });
    madeAll();
    await settled(t, alice, endpoint.id, count);
    expect(firstAttempts(hook.at("/a"))).toEqual(Array.from({ length: count }, (_, i) => i + 1));
  });

  test("two instances make an endpoint's first attempts in seq order: neither claims past the other's run", async () => {
    const hook = receiver(() => Bun.sleep(10).then(() => new Response("ok")));
    const t = await appWithDispatcher({ fairness: { perEndpoint: 1 } });
    const other = startDispatcher(t.stores, { fairness: { perEndpoint: 1 }, ops: t.ops });
    running.push(other, { stop: await t.stores.changes.watch(other.wake) });
    const alice = await t.tokenFor("alice");
    const endpoint = await register(t, alice, hook.url("/a"));
    const count = 3 * CLAIMED_AHEAD;
    for (let i = 1; i <= count; i++) await t.createPlant(String(i), `p${i}`, alice);
    await settled(t, alice, endpoint.id, count);
    expect(firstAttempts(hook.at("/a"))).toEqual(Array.from({ length: count }, (_, i) => i + 1));
  });

  test("deliveries an instance died holding go out once their lease ends, before the endpoint's newer ones", async () => {
    const hook = receiver();
    const t = await makeTestApp({ webhookAllowPrivate: true });
    const alice = await t.tokenFor("alice");
    const endpoint = await register(t, alice, hook.url("/a"));
    for (let i = 1; i <= 3; i++) await t.createPlant(String(i), `p${i}`, alice);
    await createFanOut(t.stores.webhooks, t.stores.changes).due(5);
    const circuit = { failures: 5, restMs: 30_000 };
    const dead = await t.stores.webhooks.claimDue({
      count: 10,
      leaseMs: 300,
      perEndpoint: 16,
      busy: new Map(),
      circuit,
    });
    expect(dead).toHaveLength(3);
    for (let i = 4; i <= 6; i++) await t.createPlant(String(i), `p${i}`, alice);
    const dispatcher = startDispatcher(t.stores, { ops: t.ops });
    running.push(dispatcher, { stop: await t.stores.changes.watch(dispatcher.wake) });
    await settled(t, alice, endpoint.id, 6);
    expect(firstAttempts(hook.at("/a"))).toEqual([1, 2, 3, 4, 5, 6]);
  });

  test("an endpoint whose attempts keep failing rests: one probe per rest, other endpoints unaffected; a 2xx ends it", async () => {
    let up = false;
    const hook = receiver((request) => new Response("x", { status: request.path === "/ok" || up ? 200 : 500 }));
    const rest = { failures: 5, restMs: 1_000 };
    // One attempt at a time, so the run of failures is counted without attempts in flight past it.
    const fairness = { circuit: rest, perEndpoint: 1 };
    const t = await appWithDispatcher({ retryDelaysMs: Array(20).fill(20), fairness });
    const alice = await t.tokenFor("alice");
    const down = await register(t, alice, hook.url("/down"));
    const ok = await register(t, alice, hook.url("/ok"));
    for (let i = 1; i <= 3; i++) await t.createPlant(String(i), `p${i}`, alice);
    // Five failures in a row, then a rest, then a probe that fails too, then another rest.
    await until(async () => hook.at("/down"), { holds: (list) => list.length === 6 });
    const gap = (i: number, list = hook.at("/down")) => (list[i] as Received).at - (list[i - 1] as Received).at;
    expect(gap(5)).toBeGreaterThanOrEqual(rest.restMs - 50);
    // Meanwhile the same user's other endpoint had every delivery at once.
    expect(await settled(t, alice, ok.id, 3)).toMatchObject(Array(3).fill({ status: "delivered", attempts: 1 }));
    // The rest leaves the deliveries pending, their attempts spent only by what was sent.
    // The sixth attempt reached the receiver before its record commits: wait for the record.
    const spent = (list: Awaited<ReturnType<typeof deliveries>>) => list.reduce((sum, d) => sum + d.attempts, 0);
    const waiting = await until(() => deliveries(t, alice, down.id), { holds: (list) => spent(list) >= 6 });
    expect(waiting.every((d) => d.status === "pending")).toBe(true);
    expect(spent(waiting)).toBe(6);
    up = true;
    const log = await settled(t, alice, down.id, 3);
    expect(log.every((d) => d.status === "delivered")).toBe(true);
    const all = hook.at("/down");
    expect(all).toHaveLength(9);
    expect(gap(6)).toBeGreaterThanOrEqual(rest.restMs - 50);
    expect(all.slice(6).every((r) => r.at - (all[6] as Received).at < rest.restMs)).toBe(true);
  });

  test("attempts start within the budget: no more than attemptsPerSecond before the clock moves on", async () => {
    const hook = receiver();
    const t = await makeTestApp({ webhookAllowPrivate: true });
    const alice = await t.tokenFor("alice");
    await register(t, alice, hook.url());
    for (let i = 1; i <= 12; i++) await t.createPlant(String(i), `p${i}`, alice);
    let now = Date.now();
    let ticks = 0;
    const store = {
      ...t.stores.webhooks,
      pendingCount() {
        ticks++;
        return t.stores.webhooks.pendingCount();
      },
    };
    const fairness = { attemptsPerSecond: 5, perEndpoint: 100 };
    running.push(startDispatcher(t.stores, { store, retryDelaysMs: [], ops: t.ops, clock: () => now, fairness }));
    await until(async () => hook.received.length, { holds: (n) => n === 5 });
    const seen = ticks;
    await until(async () => ticks, { holds: (n) => n >= seen + 5 });
    expect(hook.received).toHaveLength(5);
    now += 1_000;
    await until(async () => hook.received.length, { holds: (n) => n === 10 });
    now += 1_000;
    await until(async () => hook.received.length, { holds: (n) => n === 12 });
  });

  test("deliveries let go of are not charged to the budget again: it counts attempts made", async () => {
    // The first attempt fails, so the three claimed behind it are let go of and claimed again.
    const hook = receiver((_request, nth) => new Response("x", { status: nth === 1 ? 500 : 200 }));
    const t = await makeTestApp({ webhookAllowPrivate: true });
    const alice = await t.tokenFor("alice");
    await register(t, alice, hook.url());
    for (let i = 1; i <= 4; i++) await t.createPlant(String(i), `p${i}`, alice);
    const now = Date.now();
    const fairness = { attemptsPerSecond: 4, perEndpoint: 1 };
    running.push(startDispatcher(t.stores, { retryDelaysMs: [60_000], ops: t.ops, clock: () => now, fairness }));
    // The clock stands still: four attempts fit the budget only if the three let go of were given back.
    await until(async () => hook.received.length, { holds: (n) => n === 4 });
    const ids = hook.received.map((r) => (parseJsonExact(r.body) as { id: number }).id);
    expect(ids).toEqual([1, 2, 3, 4]);
  });
});

describe.if(onPostgres)("a release held up (postgres)", () => {
  test("one endpoint's release held up by a lock holds up that endpoint only: another's deliveries go out", async () => {
    const { promise: locked, resolve: lockTaken } = Promise.withResolvers<void>();
    const failing = receiver(() => locked.then(() => new Response("x", { status: 500 })));
    const fine = receiver();
    const t = await appWithDispatcher({ retryDelaysMs: [60_000], fairness: { perEndpoint: 1 } });
    const alice = await t.tokenFor("alice");
    const bob = await t.tokenFor("bob");
    const held = await register(t, bob, failing.url("/e"));
    const other = new SQL(t.postgresUrl as string, { max: 1 });
    const session = await other.reserve();
    try {
      for (let i = 1; i <= 3; i++) await t.createPlant(String(i), `b${i}`, bob);
      await until(async () => failing.received.length, { holds: (n) => n === 1 });
      // The waiting two held by another session: the release after the first one's failure waits for them.
      await session`BEGIN`;
      await session`SELECT seq FROM webhook_deliveries WHERE webhook_id = ${held.id}
        AND seq > (SELECT min(seq) FROM webhook_deliveries WHERE webhook_id = ${held.id}) FOR UPDATE`;
      lockTaken();
      await until(async () => (await deliveries(t, bob, held.id)).some((d) => d.attempts === 1));
      await register(t, alice, fine.url("/a"));
      await t.createPlant("1", "a1", alice);
      await until(async () => fine.received.length, { holds: (n) => n === 1, timeoutMs: 3_000 });
      expect(failing.received).toHaveLength(1);
    } finally {
      await session`ROLLBACK`;
      session.release();
      await other.close();
    }
  });
});

describe(`the dispatcher woken by the change log (${ENGINE})`, () => {
  test("with its poll an hour away, each change is delivered at once, the last of a burst too", async () => {
    const hook = receiver();
    const t = await makeTestApp({ webhookAllowPrivate: true });
    const alice = await t.tokenFor("alice");
    await register(t, alice, hook.url());
    const dispatcher = createDispatcher({
      store: t.stores.webhooks,
      fanOut: createFanOut(t.stores.webhooks, t.stores.changes),
      retryDelaysMs: [],
      allowPrivate: true,
      log: () => {},
      metrics: t.ops.metrics,
      pollMs: 3_600_000,
    });
    running.push(dispatcher);
    dispatcher.start();
    const stopWaking = await t.stores.changes.watch(dispatcher.wake);
    running.push({ stop: stopWaking });
    await t.createPlant("1", "first", alice);
    await until(async () => hook.received.length, { holds: (n) => n === 1, timeoutMs: 5_000 });
    for (let i = 2; i <= 20; i++) await t.createPlant(String(i), `p${i}`, alice);
    await until(async () => hook.received.length, { holds: (n) => n === 20, timeoutMs: 5_000 });
    expect(hook.received.map((r) => JSON.parse(r.body).id).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
  });
});

describe(`the dispatcher when the database fails (${ENGINE})`, () => {
  test("a failing claim is logged once per streak, and deliveries go out once the database answers again", async () => {
    const hook = receiver();
    const t = await makeTestApp({ webhookAllowPrivate: true });
    const alice = await t.tokenFor("alice");
    const endpoint = await register(t, alice, hook.url());
    let down = true;
    let failedClaims = 0;
    const store = {
      ...t.stores.webhooks,
      claimDue(request: ClaimRequest) {
        if (!down) return t.stores.webhooks.claimDue(request);
        failedClaims++;
        return Promise.reject(new StoreUnavailable("unreachable", { cause: new Error("connection refused") }));
      },
    };
    const logged: string[] = [];
    const dispatcher = createDispatcher({
      store,
      fanOut: createFanOut(t.stores.webhooks, t.stores.changes),
      retryDelaysMs: [],
      allowPrivate: true,
      log: (message) => logged.push(message),
      metrics: t.ops.metrics,
      pollMs: 20,
    });
    running.push(dispatcher);
    dispatcher.start();
    await t.createPlant("1", "Fern", alice);
    await until(async () => failedClaims, { holds: (n) => n >= 5, timeoutMs: 5_000 });
    expect(failedClaims).toBeGreaterThanOrEqual(5);
    expect(logged).toEqual(["webhook dispatcher: claiming due deliveries failed; retrying at the next poll"]);
    expect(hook.received).toHaveLength(0);
    down = false;
    expect(await settled(t, alice, endpoint.id, 1)).toMatchObject([{ status: "delivered", attempts: 1 }]);
    expect(hook.received).toHaveLength(1);
    expect(logged).toHaveLength(1);
  });
});

describe(`the dispatcher on stop (${ENGINE})`, () => {
  test("what it claimed and had not started is let go of: due again at once, not left to its lease", async () => {
    const { promise: answered, resolve: answer } = Promise.withResolvers<void>();
    const hook = receiver(() => answered.then(() => new Response("ok")));
    const t = await appWithDispatcher({ fairness: { perEndpoint: 1 } });
    const alice = await t.tokenFor("alice");
    const endpoint = await register(t, alice, hook.url());
    for (let i = 1; i <= 4; i++) await t.createPlant(String(i), `p${i}`, alice);
    await until(async () => hook.received.length, { holds: (n) => n === 1 });
    // The first is in flight; wait for the other three to be claimed behind it.
    await until(() => deliveries(t, alice, endpoint.id), {
      holds: (list) =>
        list.length === 4 && list.every((d) => Date.parse(d.nextAttemptAt as string) > Date.now() + 5_000),
    });
    const stopped = t.dispatcher.stop(10_000);
    answer();
    await stopped;
    const claimed = await t.stores.webhooks.claimDue({
      count: 100,
      leaseMs: 60_000,
      perEndpoint: 10,
      busy: new Map(),
      circuit: { failures: 5, restMs: 30_000 },
    });
    expect(claimed).toHaveLength(3);
    expect(hook.received).toHaveLength(1);
  });

  test("a claim under way when it stops is sent and recorded before stop resolves", async () => {
    const hook = receiver();
    const t = await makeTestApp({ webhookAllowPrivate: true });
    const alice = await t.tokenFor("alice");
    const endpoint = await register(t, alice, hook.url());
    await t.createPlant("1", "Fern", alice);
    let releaseClaim = () => {};
    const claimHeld = new Promise<void>((resolve) => {
      releaseClaim = resolve;
    });
    let claims = 0;
    const store = {
      ...t.stores.webhooks,
      async claimDue(request: ClaimRequest) {
        claims++;
        const batch = await t.stores.webhooks.claimDue(request);
        await claimHeld;
        return batch;
      },
    };
    const dispatcher = createDispatcher({
      store,
      fanOut: createFanOut(t.stores.webhooks, t.stores.changes),
      retryDelaysMs: [],
      allowPrivate: true,
      log: () => {},
      metrics: t.ops.metrics,
    });
    running.push(dispatcher);
    dispatcher.start();
    await until(async () => claims, { holds: (n) => n === 1, timeoutMs: 5_000 });
    const stopped = dispatcher.stop(10_000);
    releaseClaim();
    await stopped;
    expect(dispatcher.inFlight()).toBe(0);
    expect(hook.received).toHaveLength(1);
    expect(await deliveries(t, alice, endpoint.id)).toMatchObject([{ status: "delivered", attempts: 1 }]);
    expect(claims).toBe(1);
  });
});

describe(`webhook metrics (${ENGINE})`, () => {
  test("count deliveries sent, retried and failed, time attempts, and show what is pending", async () => {
    const hook = receiver((request) => new Response("x", { status: request.path === "/ok" ? 200 : 500 }));
    const t = await appWithDispatcher({ retryDelaysMs: [50, 60_000] });
    const alice = await t.tokenFor("alice");
    const ok = await register(t, alice, hook.url("/ok"));
    const down = await register(t, alice, hook.url("/down"));
    await t.createPlant("1", "Fern", alice);
    await settled(t, alice, ok.id, 1);
    await until(() => deliveries(t, alice, down.id), { holds: (list) => list[0]?.attempts === 2, timeoutMs: 10_000 });
    const value = (name: string) =>
      Number(new RegExp(`^${name.replace(/[{}]/g, "\\$&")} (\\S+)$`, "m").exec(t.ops.metrics.render())?.[1]);
    expect(value("plant_store_webhook_deliveries_sent_total")).toBe(1);
    expect(value('plant_store_webhook_attempts_total{result="retried"}')).toBe(2);
    expect(value("plant_store_webhook_deliveries_failed_total")).toBe(0);
    expect(value("plant_store_webhook_attempt_duration_seconds_count")).toBe(3);
    await until(async () => value("plant_store_webhook_deliveries_pending"), {
      holds: (n) => n === 1,
      timeoutMs: 5_000,
    });
    expect(value("plant_store_webhook_deliveries_pending")).toBe(1);
  });
});

describe(`the delivery log (${ENGINE})`, () => {
  test("is paged like plants: limit, a Link to the next page, after a delivery id; bad parameters are 400", async () => {
    const t = await makeTestApp({ webhookAllowPrivate: true });
    const alice = await t.tokenFor("alice");
    const endpoint = await register(t, alice, "http://127.0.0.1:9/hook");
    for (let i = 1; i <= 5; i++) await t.createPlant(String(i), `p${i}`, alice);
    const all = await deliveries(t, alice, endpoint.id);
    expect(all).toHaveLength(5);
    expect(all.every((d) => d.status === "pending" && d.attempts === 0 && d.lastStatus === null)).toBe(true);
    const first = await t.call("GET", `/webhooks/${endpoint.id}/deliveries?limit=2`, { token: alice });
    expect(((await first.json()) as Delivery[]).map((d) => d.id)).toEqual(all.slice(0, 2).map((d) => d.id));
    const link = first.headers.get("link");
    expect(link).toBe(`</webhooks/${endpoint.id}/deliveries?limit=2&after=${all[1]?.id}>; rel="next"`);
    const pages: string[][] = [];
    let next: string | null | undefined = link;
    while (next) {
      const path = /^<([^>]+)>/.exec(next)?.[1] as string;
      const response = await t.call("GET", path, { token: alice });
      pages.push(((await response.json()) as Delivery[]).map((d) => d.id));
      next = response.headers.get("link");
    }
    expect(pages).toEqual([all.slice(2, 4).map((d) => d.id), [all[4]?.id as string]]);
    expect(await deliveries(t, alice, endpoint.id, `?after=${all[4]?.id}`)).toEqual([]);
    expect(await deliveries(t, alice, endpoint.id, "?limit=0")).toEqual([]);

    const bad = (query: string) => t.call("GET", `/webhooks/${endpoint.id}/deliveries${query}`, { token: alice });
    expect(await expectError(await bad("?after=msg_nope"), 400)).toMatch(/^after: /);
    expect(await expectError(await bad("?limit=-1"), 400)).toMatch(/^limit: /);
    expect(await expectError(await bad("?offset=2"), 400)).toMatch(/offset: unknown query parameter/);
    await expectError(await t.call("GET", "/webhooks/abc/deliveries", { token: alice }), 400);
    await expectError(await t.call("GET", "/webhooks/99999/deliveries", { token: alice }), 404);
    await expectError(await t.call("GET", "/webhooks/99999999999/deliveries", { token: alice }), 400);
  });

  test("a log past one chunk is answered whole without a limit, and up to the limit with its Link", async () => {
    const t = await makeTestApp({ webhookAllowPrivate: true });
    const alice = await t.tokenFor("alice");
    const endpoint = await register(t, alice, "http://127.0.0.1:9/hook");
    for (let batch = 0; batch < 2_500; batch += 500) {
      const created = await Promise.all(
        Array.from({ length: 500 }, (_, i) =>
          t.call("POST", "/plants", { token: alice, json: { id: batch + i, name: "p" } }),
        ),
      );
      expect(created.every((response) => response.status === 200)).toBe(true);
    }
    const all = await deliveries(t, alice, endpoint.id);
    expect(all).toHaveLength(2_500);
    expect(new Set(all.map((d) => d.id)).size).toBe(2_500);
    const limited = await t.call("GET", `/webhooks/${endpoint.id}/deliveries?limit=1500`, { token: alice });
    const page = (await limited.json()) as Delivery[];
    expect(page.map((d) => d.id)).toEqual(all.slice(0, 1500).map((d) => d.id));
    expect(limited.headers.get("link")).toBe(
      `</webhooks/${endpoint.id}/deliveries?limit=1500&after=${all[1499]?.id}>; rel="next"`,
    );
    const rest = await deliveries(t, alice, endpoint.id, `?limit=1500&after=${all[1499]?.id}`);
    expect(rest.map((d) => d.id)).toEqual(all.slice(1500).map((d) => d.id));
  });
});
