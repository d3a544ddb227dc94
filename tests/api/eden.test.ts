import { describe, expect, test } from "bun:test";
import { treaty } from "@elysiajs/eden";
import type { Plant } from "../../src/core/plant";
import { makeTestApp } from "../support/helpers";

/** True only when A and B are the same type (`any` is equal to nothing but `any`). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
/** Compiles only when its type argument is `true`: a type assertion checked by `bun run typecheck`. */
const assertType = <_ extends true>() => {};

/**
 * On the wire an id is a JSON number: a client sends a number (exact up to 2^53) or, past
 * that, a raw JSON literal, which JSON.stringify writes out as it is.
 */
const exactId = (decimal: string): number =>
  (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(decimal) as number;

/**
 * Eden types `error` from the routes' declared `response` schemas. The routes document their
 * errors in OpenAPI `detail` only, so Eden knows just Elysia's default 422 validation shape;
 * the Error body that really arrives is read as unknown.
 */
const errorBody = (error: { value: unknown } | null): unknown => error?.value;

/** A typed client on a fresh in-process app: treaty(app) calls app.handle, nothing listens. */
async function clients() {
  const t = await makeTestApp();
  const authorization = `Bearer ${await t.tokenFor("alice")}`;
  return { api: treaty(t.app, { headers: { authorization } }), anonymous: treaty(t.app), authorization };
}

describe("Eden treaty client, typed from the app", () => {
  test("create: 200 with the stored plant, typed as Plant", async () => {
    const { api } = await clients();
    const { data, error, status } = await api.plants.post({ id: 1, name: "Monstera", tag: "tropical" });
    assertType<Equal<typeof data, Plant | null>>();
    expect(status).toBe(200);
    expect(error).toBeNull();
    expect(data).toEqual({ name: "Monstera", tag: "tropical" });
  });

  test("list with limit: a typed array, by id ascending, at most `limit` long", async () => {
    const { api } = await clients();
    for (const [id, name] of [
      [3, "Cactus"],
      [1, "Monstera"],
      [2, "Fern"],
    ] as const) {
      expect((await api.plants.post({ id: id, name })).status).toBe(200);
    }
    const { data, status } = await api.plants.get({ query: { limit: 2 } });
    assertType<Equal<typeof data, Plant[] | null>>();
    expect(status).toBe(200);
    expect(data).toEqual([{ name: "Monstera" }, { name: "Fern" }]);
    expect((await api.plants.get()).data?.map((plant) => plant.name)).toEqual(["Monstera", "Fern", "Cactus"]);
  });

  test("paging: pass the Link header's after back until there is none; after and tag are typed", async () => {
    const { api } = await clients();
    for (const id of [5, 1, 4, 2, 3]) {
      expect((await api.plants.post({ id, name: `P${id}`, tag: id % 2 === 0 ? "even" : "odd" })).status).toBe(200);
    }
    async function walk(tag?: string) {
      const names: string[] = [];
      let after: string | undefined;
      for (;;) {
        const query = { limit: 2, ...(after === undefined ? {} : { after }), ...(tag === undefined ? {} : { tag }) };
        const { data, response } = await api.plants.get({ query });
        names.push(...(data ?? []).map((plant) => plant.name));
        after = response.headers.get("link")?.match(/[?&]after=(-?[0-9]+)/)?.[1];
        if (after === undefined) return names;
      }
    }
    expect(await walk()).toEqual(["P1", "P2", "P3", "P4", "P5"]);
    expect(await walk("odd")).toEqual(["P1", "P3", "P5"]);
    const one = await api.plants({ id: 4 }).get();
    assertType<Equal<typeof one.data, Plant | null>>();
    expect(one.data).toEqual({ name: "P4", tag: "even" });
  });

  test("delete: 204, and the plant is gone", async () => {
    const { api } = await clients();
    await api.plants.post({ id: 7, name: "Fern" });
    const deleted = await api.plants({ id: 7 }).delete();
    expect(deleted.status).toBe(204);
    expect(deleted.error).toBeNull();
    expect((await api.plants.get()).data).toEqual([]);
    const again = await api.plants({ id: 7 }).delete();
    expect(again.status).toBe(404);
    expect(errorBody(again.error)).toMatchObject({ error: 404 });
  });

  test("a safe rename: the ETag read, PATCH with If-Match (200, a new ETag), the old ETag again 412; PUT replaces", async () => {
    const { api, anonymous, authorization } = await clients();
    // Eden types a call's headers as the client's own (authorization) only: a client made without
    // them takes any header, If-Match among them.
    const ifMatch = (tag: string) => ({ headers: { authorization, "if-match": tag } });
    const created = await api.plants.post({ id: 7, name: "Fern", tag: "shade" });
    const etag = created.response.headers.get("etag") as string;
    expect(etag).toMatch(/^"[^"]+"$/);
    expect((await api.plants({ id: 7 }).get()).response.headers.get("etag")).toBe(etag);

    const renamed = await anonymous.plants({ id: 7 }).patch({ name: "Ivy" }, ifMatch(etag));
    assertType<Equal<typeof renamed.data, Plant | null>>();
    expect(renamed.status).toBe(200);
    expect(renamed.data).toEqual({ name: "Ivy", tag: "shade" });
    const renamedTag = renamed.response.headers.get("etag") as string;
    expect(renamedTag).toMatch(/^"[^"]+"$/);
    expect(renamedTag).not.toBe(etag);

    const stale = await anonymous.plants({ id: 7 }).patch({ tag: null }, ifMatch(etag));
    expect(stale.status).toBe(412);
    expect(stale.data).toBeNull();
    expect(errorBody(stale.error)).toMatchObject({ error: 412 });

    const replaced = await anonymous.plants({ id: 7 }).put({ name: "Oak" }, ifMatch(renamedTag));
    assertType<Equal<typeof replaced.data, Plant | null>>();
    expect(replaced.status).toBe(200);
    expect(replaced.data).toEqual({ name: "Oak" });
    const replacedTag = replaced.response.headers.get("etag");
    expect(replacedTag).not.toBe(renamedTag);
    expect((await api.plants({ id: 7 }).get()).response.headers.get("etag")).toBe(replacedTag);
    // @ts-expect-error a PATCH name must be a string
    expect((await api.plants({ id: 7 }).patch({ name: 5 })).status).toBe(400);
  });

  test("a duplicate id: 409 with the Error body, and the stored plant unchanged", async () => {
    const { api } = await clients();
    await api.plants.post({ id: 1, name: "Monstera" });
    const duplicate = await api.plants.post({ id: 1, name: "Impostor" });
    expect(duplicate.status).toBe(409);
    expect(duplicate.data).toBeNull();
    expect(errorBody(duplicate.error)).toEqual({
      error: 409,
      message: "id: you already have a plant with this id; delete it first to replace it",
    });
    expect((await api.plants.get()).data).toEqual([{ name: "Monstera" }]);
  });

  test("no token: 401 with WWW-Authenticate and the Error body", async () => {
    const { anonymous } = await clients();
    const { status, error, response } = await anonymous.plants.get();
    expect(status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe("Bearer");
    expect(errorBody(error)).toMatchObject({ error: 401 });
  });

  test("a wrong body shape is a type error (and a 400 at run time)", async () => {
    const { api } = await clients();
    // @ts-expect-error name must be a string
    const wrong = await api.plants.post({ id: 1, name: 42 });
    expect(wrong.status).toBe(400);
    expect(errorBody(wrong.error)).toEqual({ error: 400, message: "name: must be a string of 1 to 256 characters" });
  });

  test("ids past 2^53 stay exact when sent as raw JSON literals", async () => {
    const { api } = await clients();
    expect((await api.plants.post({ id: exactId("9223372036854775807"), name: "Max" })).status).toBe(200);
    expect((await api.plants.post({ id: exactId("9223372036854775806"), name: "Max - 1" })).status).toBe(200);
    expect((await api.plants.get()).data).toEqual([{ name: "Max - 1" }, { name: "Max" }]);
    expect((await api.plants({ id: "9223372036854775807" }).delete()).status).toBe(204);
    expect((await api.plants.get()).data).toEqual([{ name: "Max - 1" }]);
  });

  test("a bigint id cannot be sent: Eden's JSON.stringify refuses it (send a number or a raw literal)", async () => {
    const { api } = await clients();
    await expect(api.plants.post({ id: 1n, name: "Monstera" })).rejects.toThrow(/BigInt/);
  });

  test("a create retried with its Idempotency-Key: the same typed Plant, marked replayed", async () => {
    const { api } = await clients();
    const headers = { "idempotency-key": "eden-retry" };
    const first = await api.plants.post({ id: 1, name: "Monstera" }, { headers });
    const retry = await api.plants.post({ id: 1, name: "Monstera" }, { headers });
    assertType<Equal<typeof retry.data, Plant | null>>();
    expect([first.status, retry.status]).toEqual([200, 200]);
    expect(retry.data).toEqual(first.data as Plant);
    expect(retry.response.headers.get("idempotent-replayed")).toBe("true");
  });
});
