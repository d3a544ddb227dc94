/**
 * Creates that are safe to retry: `Idempotency-Key` on POST /plants (SPEC.md, "Retrying a create
 * safely"), through the real app on the engine under test. Across instances and restarts:
 * tests/process/idempotency-server.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { StoreUnavailable } from "../../src/core/failures";
import type { KeyedCreate, KeyedOutcome } from "../../src/core/idempotency";
import type { NewPlant } from "../../src/core/plant";
import type { Stores } from "../../src/core/stores";
import { keptAnswer as answer, ENGINE, expectError, makeTestApp, onSqlite, type TestApp } from "../support/helpers";

const HOUR_MS = 3_600_000;
const BIG = "9223372036854775807";

function post(t: TestApp, token: string, json: string, key?: string) {
  return t.call("POST", "/plants", { token, json, headers: key === undefined ? {} : { "idempotency-key": key } });
}

async function plantIds(t: TestApp, token: string): Promise<string> {
  const response = await t.call("GET", "/plants?fields=id", { token });
  return response.text();
}

/** A plant store whose keyed creates wait for `release()` (and can be made to fail once). */
function heldCreates() {
  let release = () => {};
  let gate: Promise<void> | undefined;
  let reached = Promise.withResolvers<void>();
  let failNext = false;
  return {
    hold() {
      gate = new Promise((resolve) => {
        release = resolve;
      });
      reached = Promise.withResolvers<void>();
    },
    release: () => release(),
    /** Settles once a create has reached the store (and waits at the gate, when held). */
    reached: () => reached.promise,
    failOnce() {
      failNext = true;
    },
    wrap: (stores: Stores): Stores => ({
      ...stores,
      plants: {
        ...stores.plants,
        async createPlantOnce(ownerId: number, plant: NewPlant, keyed: KeyedCreate): Promise<KeyedOutcome> {
          if (failNext) {
            failNext = false;
            throw new StoreUnavailable("busy");
          }
          reached.resolve();
          await gate;
          return stores.plants.createPlantOnce(ownerId, plant, keyed);
        },
      },
    }),
  };
}

describe(`Idempotency-Key on POST /plants (${ENGINE})`, () => {
  test("a retry with the same key and body gets the first answer byte for byte, replayed, and creates nothing", async () => {
    const t = await makeTestApp();
    const { token } = await t.user();
    const json = `{"id":${BIG},"name":"Fern","tag":"shade"}`;
    const first = await answer(await post(t, token, json, "retry-1"));
    expect(first).toEqual({
      status: 200,
      contentType: expect.stringMatching(/^application\/json/),
      etag: expect.stringMatching(/^"[^"]+"$/),
      replayed: null,
      body: '{"name":"Fern","tag":"shade"}',
    });
    // The same plant, written another way, is the same request.
    const again = `{ "name": "Fern", "tag": "shade", "id": ${BIG} }`;
    for (const body of [json, again]) {
      expect(await answer(await post(t, token, body, "retry-1"))).toEqual({ ...first, replayed: "true" });
    }
    expect(await plantIds(t, token)).toBe(`[{"id":${BIG}}]`);
    // The kept ETag is the stored plant's, as GET gives it, with an empty tag or none too.
    const stored = async (id: string) => (await t.call("GET", `/plants/${id}`, { token })).headers.get("etag");
    expect(await stored(BIG)).toBe(first.etag);
    for (const [id, rest] of [
      ["5", ',"tag":""'],
      ["6", ""],
    ]) {
      const kept = await answer(await post(t, token, `{"id":${id},"name":"Moss"${rest}}`, `etag-${id}`));
      expect(await stored(id as string)).toBe(kept.etag);
    }
    // Without the key the same create is an ordinary second create: 409.
    await expectError(await post(t, token, json), 409);
  });

  test("a replay makes no second webhook delivery", async () => {
    const t = await makeTestApp({ webhookAllowPrivate: true });
    const { token } = await t.user();
    const hook = await t.call("POST", "/webhooks", { token, json: { url: "http://127.0.0.1:9/hook" } });
    expect(hook.status).toBe(201);
    const { id } = (await hook.json()) as { id: number };
    for (let i = 0; i < 3; i++) expect((await post(t, token, '{"id":1,"name":"Fern"}', "hooked")).status).toBe(200);
    const deliveries = await t.call("GET", `/webhooks/${id}/deliveries`, { token });
    expect(((await deliveries.json()) as unknown[]).length).toBe(1);
  });

  test("the same key with another body: 422, and nothing changes", async () => {
    const t = await makeTestApp();
    const { token } = await t.user();
    expect((await post(t, token, '{"id":1,"name":"Fern"}', "k")).status).toBe(200);
    for (const other of ['{"id":2,"name":"Fern"}', '{"id":1,"name":"Palm"}', '{"id":1,"name":"Fern","tag":""}']) {
      expect(await expectError(await post(t, token, other, "k"), 422)).toContain("Idempotency-Key");
    }
    expect(await plantIds(t, token)).toBe('[{"id":1}]');
    expect(await (await t.call("GET", "/plants/1", { token })).json()).toEqual({ name: "Fern" });
  });

  test("keys belong to the user who sent them", async () => {
    const t = await makeTestApp();
    const alice = await t.user("alice");
    const bob = await t.user("bob");
    const json = '{"id":7,"name":"Fern"}';
    expect((await answer(await post(t, alice.token, json, "shared"))).replayed).toBeNull();
    // Bob's create under alice's key is his own: processed, with another body, no 422.
    const bobs = await answer(await post(t, bob.token, '{"id":8,"name":"Palm"}', "shared"));
    expect(bobs).toMatchObject({ status: 200, replayed: null, body: '{"name":"Palm"}' });
    expect(await plantIds(t, bob.token)).toBe('[{"id":8}]');
    // And each one's retry gets their own kept answer.
    expect(await answer(await post(t, bob.token, '{"id":8,"name":"Palm"}', "shared"))).toEqual({
      ...bobs,
      replayed: "true",
    });
    expect((await answer(await post(t, alice.token, json, "shared"))).replayed).toBe("true");
    expect(await plantIds(t, alice.token)).toBe('[{"id":7}]');
  });

  test("a key that is not 1-255 visible ASCII characters: 400 naming the header, nothing created", async () => {
    const t = await makeTestApp();
    const { token } = await t.user();
    for (const key of ["", "a".repeat(256), "has space", "tab\there", "caf\u00e9"]) {
      const response = await t.call("POST", "/plants", {
        token,
        json: '{"id":1,"name":"Fern"}',
        headers: { "idempotency-key": key },
      });
      expect(await expectError(response, 400)).toContain("Idempotency-Key");
    }
    expect(await plantIds(t, token)).toBe("[]");
    expect((await post(t, token, '{"id":1,"name":"Fern"}', `${"~!".repeat(127)}x`)).status).toBe(200);
  });

  test("a kept 409 (the id was taken) is replayed as a 409 even once the id is free again", async () => {
    const t = await makeTestApp();
    const { token } = await t.user();
    expect((await post(t, token, '{"id":1,"name":"Old"}')).status).toBe(200);
    const taken = await answer(await post(t, token, '{"id":1,"name":"New"}', "late"));
    // The same answer, content type included, as the same create without a key.
    const plain = await answer(await post(t, token, '{"id":1,"name":"New"}'));
    expect(taken).toEqual({ ...plain, status: 409, replayed: null, etag: null });
    expect((await t.call("DELETE", "/plants/1", { token })).status).toBe(204);
    expect(await answer(await post(t, token, '{"id":1,"name":"New"}', "late"))).toEqual({ ...taken, replayed: "true" });
    expect(await plantIds(t, token)).toBe("[]");
  });

  test("while the first request with a key is processed, another gets 409 with Retry-After; then the replay", async () => {
    const held = heldCreates();
    const t = await makeTestApp({ wrapStores: held.wrap });
    const { token } = await t.user();
    held.hold();
    const first = post(t, token, '{"id":1,"name":"Fern"}', "slow");
    // The first is parked in the store; the second comes while it is.
    await held.reached();
    const second = await post(t, token, '{"id":1,"name":"Fern"}', "slow");
    expect(await expectError(second, 409)).toContain("Idempotency-Key");
    expect(second.headers.get("retry-after")).toBe("1");
    held.release();
    expect((await first).status).toBe(200);
    const third = await post(t, token, '{"id":1,"name":"Fern"}', "slow");
    expect(third.headers.get("idempotent-replayed")).toBe("true");
  });

  test("many at once with one key: one plant, one fresh 200, every other a replay or a 409 with Retry-After", async () => {
    const t = await makeTestApp();
    const { token } = await t.user();
    const answers = await Promise.all(
      Array.from({ length: 10 }, async () => answer(await post(t, token, '{"id":1,"name":"Fern"}', "burst"))),
    );
    const fresh = answers.filter((a) => a.status === 200 && a.replayed === null);
    expect(fresh).toHaveLength(1);
    for (const other of answers.filter((a) => a !== fresh[0])) {
      if (other.status === 200) expect(other).toEqual({ ...(fresh[0] as (typeof answers)[0]), replayed: "true" });
      else expect(other.body).toContain("Idempotency-Key");
    }
    expect(await plantIds(t, token)).toBe('[{"id":1}]');
  });

  test("a 5xx is not kept: the retry is processed anew", async () => {
    const held = heldCreates();
    const t = await makeTestApp({ wrapStores: held.wrap });
    const { token } = await t.user();
    held.failOnce();
    await expectError(await post(t, token, '{"id":1,"name":"Fern"}', "flaky"), 503);
    const retry = await post(t, token, '{"id":1,"name":"Fern"}', "flaky");
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBeNull();
  });

  test("a kept answer expires after IDEMPOTENCY_TTL_HOURS: not replayed even before it is pruned, then pruned", async () => {
    let now = 1_800_000_000_000;
    const t = await makeTestApp({ now: () => now, idempotencyTtlHours: 2 });
    const { token } = await t.user();
    const json = '{"id":1,"name":"Fern"}';
    expect((await post(t, token, json, "ttl")).status).toBe(200);
    expect((await t.call("DELETE", "/plants/1", { token })).status).toBe(204);
    now += 2 * HOUR_MS - 1;
    expect((await post(t, token, json, "ttl")).headers.get("idempotent-replayed")).toBe("true");
    expect(await plantIds(t, token)).toBe("[]");
    now += 1;
    const anew = await post(t, token, json, "ttl");
    expect(anew.status).toBe(200);
    expect(anew.headers.get("idempotent-replayed")).toBeNull();
    expect(await plantIds(t, token)).toBe('[{"id":1}]');
    // The pruner removes records by age, oldest first, in batches.
    for (const key of ["a", "b", "c"]) await post(t, token, `{"id":2,"name":"${key}"}`, key);
    expect(await t.stores.plants.pruneIdempotencyKeys(now + 1, 3)).toBe(3);
    expect(await t.stores.plants.pruneIdempotencyKeys(now + 1, 3)).toBe(1);
    expect(await t.stores.plants.pruneIdempotencyKeys(now + 1, 3)).toBe(0);
  });

  test("the plant and its kept answer are one transaction: when keeping fails, no plant stays, and others' creates go on", async () => {
    const t = await makeTestApp();
    const { token } = await t.user();
    if (onSqlite) {
      t.sqlite.run(`CREATE TRIGGER refuse BEFORE INSERT ON idempotency_keys
        WHEN NEW.key = 'doomed' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
    } else {
      const session = new SQL(t.postgresUrl as string, { max: 1 });
      await session.unsafe(`CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.key = 'doomed' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$`);
      await session.unsafe(
        "CREATE TRIGGER refuse BEFORE INSERT ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION refuse()",
      );
      await session.close();
    }
    const [doomed, fine, plain] = await Promise.all([
      post(t, token, '{"id":1,"name":"Doomed"}', "doomed"),
      post(t, token, '{"id":2,"name":"Fine"}', "fine"),
      post(t, token, '{"id":3,"name":"Plain"}'),
    ]);
    expect(doomed.status).toBe(500);
    expect([fine.status, plain.status]).toEqual([200, 200]);
    expect(await plantIds(t, token)).toBe('[{"id":2},{"id":3}]');
  });

  test("a browser on an allowed origin may send the key and read Idempotent-Replayed", async () => {
    const origin = "https://app.example";
    const t = await makeTestApp({ corsOrigins: [origin] });
    const { token } = await t.user();
    const preflight = await t.call("OPTIONS", "/plants", {
      headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "idempotency-key" },
    });
    expect(preflight.headers.get("access-control-allow-headers")?.split(/,\s*/)).toContain("idempotency-key");
    await post(t, token, '{"id":1,"name":"Fern"}', "cors");
    const replay = await t.call("POST", "/plants", {
      token,
      json: '{"id":1,"name":"Fern"}',
      headers: { origin, "idempotency-key": "cors" },
    });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.headers.get("access-control-expose-headers")?.split(/,\s*/)).toContain("idempotent-replayed");
  });

  test("the OpenAPI document declares the key, the replay header, 409 with Retry-After and 422 on POST /plants", async () => {
    const t = await makeTestApp();
    const document = (await (await t.call("GET", "/openapi.json")).json()) as {
      paths: Record<
        string,
        Record<
          string,
          { parameters?: Array<{ name: string; in: string }>; responses: Record<string, { headers?: object }> }
        >
      >;
    };
    const create = document.paths["/plants"]?.post;
    expect(create?.parameters).toContainEqual(expect.objectContaining({ name: "Idempotency-Key", in: "header" }));
    expect(Object.keys(create?.responses["200"]?.headers ?? {})).toContain("Idempotent-Replayed");
    expect(Object.keys(create?.responses["409"]?.headers ?? {})).toContain("Idempotent-Replayed");
    expect(create?.responses["409"]).toMatchObject({ description: expect.stringContaining("Retry-After") });
    expect(create?.responses["422"]).toBeDefined();
  });
});
