import { beforeEach, describe, expect, test } from "bun:test";
import { expectError, makeTestApp, type TestApp } from "../support/helpers";

describe("PUT and PATCH /plants/{id}, ETag and preconditions", () => {
  let t: TestApp;
  let token: string;

  beforeEach(async () => {
    t = await makeTestApp();
    token = await t.tokenFor("alice");
  });

  type Init = { json?: unknown; headers?: Record<string, string>; as?: string };
  const call = (method: string, path: string, { json, headers, as = token }: Init = {}) =>
    t.call(method, path, { token: as, json, headers });
  const put = (id: string, json: unknown, init: Init = {}) => call("PUT", `/plants/${id}`, { ...init, json });
  const patch = (id: string, json: unknown, init: Init = {}) =>
    call("PATCH", `/plants/${id}`, {
      ...init,
      json,
      headers: { "content-type": "application/merge-patch+json", ...init.headers },
    });
  const get = (id: string, init: Init = {}) => call("GET", `/plants/${id}`, init);
  const stored = async (id: string, as = token) => (await get(id, { as })).json();
  const etagOf = async (id: string) => (await get(id)).headers.get("etag") as string;
  const ifMatch = (tag: string) => ({ headers: { "if-match": tag } });

  describe("PUT replaces the plant", () => {
    test("200 with the plant as stored; a tag left out is removed; an id in the body is ignored", async () => {
      await call("POST", "/plants", { json: { id: 7, name: "Fern", tag: "green" } });
      const response = await put("7", { id: 99, name: "Ivy" });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ name: "Ivy" });
      expect(await stored("7")).toEqual({ name: "Ivy" });
      await expectError(await get("99"), 404);
      expect(await (await put("7", { name: "Rose", tag: "red" })).json()).toEqual({ name: "Rose", tag: "red" });
      expect(await stored("7")).toEqual({ name: "Rose", tag: "red" });
    });

    test("the same rules as create: 400 for a missing or bad name or tag, nothing changed", async () => {
      await t.createPlant("7", "Fern", token);
      for (const body of [{}, { name: "" }, { name: 5 }, { name: "x".repeat(257) }, { name: "Ivy", tag: null }, []])
        await expectError(await put("7", body), 400);
      expect(await stored("7")).toEqual({ name: "Fern" });
    });

    test("400/401/413/415 as for create", async () => {
      await t.createPlant("7", "Fern", token);
      await expectError(await call("PUT", "/plants/7", { json: "{not json" }), 400);
      await expectError(await t.call("PUT", "/plants/7", { json: { name: "Ivy" } }), 401);
      await expectError(await put("7", { name: "Ivy", tag: "x".repeat(70_000) }), 413);
      await expectError(await put("7", "{}", { headers: { "content-type": "text/plain" } }), 415);
      expect(await stored("7")).toEqual({ name: "Fern" });
    });

    test("404 when the id is not among the caller's plants: creation stays POST", async () => {
      const bob = await t.tokenFor("bob");
      await t.createPlant("7", "Bob's fern", bob);
      await expectError(await put("7", { name: "Mine" }), 404);
      await expectError(await put("8", { name: "Mine" }), 404);
      expect(await stored("7", bob)).toEqual({ name: "Bob's fern" });
      await expectError(await get("8"), 404);
    });

    test("ids past 2^53 are exact", async () => {
      await t.createPlant("9223372036854775807", "Max", token);
      await t.createPlant("9223372036854775806", "Max - 1", token);
      expect((await put("9223372036854775807", { name: "Changed" })).status).toBe(200);
      expect(await stored("9223372036854775806")).toEqual({ name: "Max - 1" });
      expect(await stored("9223372036854775807")).toEqual({ name: "Changed" });
    });
  });

  describe("PATCH merges (RFC 7396)", () => {
    beforeEach(async () => {
      await call("POST", "/plants", { json: { id: 7, name: "Fern", tag: "green" } });
    });

    test("name alone keeps the tag; tag alone keeps the name; tag null removes it", async () => {
      expect(await (await patch("7", { name: "Ivy" })).json()).toEqual({ name: "Ivy", tag: "green" });
      expect(await (await patch("7", { tag: "" })).json()).toEqual({ name: "Ivy", tag: "" });
      const removed = await patch("7", { tag: null });
      expect(removed.status).toBe(200);
      expect(await removed.json()).toEqual({ name: "Ivy" });
      expect(await stored("7")).toEqual({ name: "Ivy" });
    });

    test("application/json is accepted too; other keys are ignored", async () => {
      const response = await call("PATCH", "/plants/7", { json: { name: "Ivy", id: 8, colour: "blue" } });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ name: "Ivy", tag: "green" });
      await expectError(await get("8"), 404);
    });

    test("{} changes nothing and answers 200 with the plant and its unchanged ETag", async () => {
      const before = await etagOf("7");
      const response = await patch("7", {});
      expect(response.status).toBe(200);
      expect(response.headers.get("etag")).toBe(before);
      expect(await response.json()).toEqual({ name: "Fern", tag: "green" });
    });

    test('"name": null or a wrong type is 400 naming the field, nothing changed', async () => {
      expect(await expectError(await patch("7", { name: null }), 400)).toStartWith("name:");
      expect(await expectError(await patch("7", { name: 5 }), 400)).toStartWith("name:");
      expect(await expectError(await patch("7", { name: "" }), 400)).toStartWith("name:");
      expect(await expectError(await patch("7", { tag: 5 }), 400)).toStartWith("tag:");
      await expectError(await patch("7", [{ op: "replace" }]), 400);
      expect(await stored("7")).toEqual({ name: "Fern", tag: "green" });
    });

    test("400/401/404/413/415 as for create", async () => {
      await expectError(await call("PATCH", "/plants/7", { json: "{" }), 400);
      await expectError(await t.call("PATCH", "/plants/7", { json: { name: "Ivy" } }), 401);
      await expectError(await patch("8", { name: "Ivy" }), 404);
      await expectError(await patch("7", { tag: "x".repeat(70_000) }), 413);
      await expectError(await patch("7", "{}", { headers: { "content-type": "text/plain" } }), 415);
      expect(await stored("7")).toEqual({ name: "Fern", tag: "green" });
    });
  });

  describe("ETag", () => {
    test("every one-plant answer carries the same strong ETag for the same plant", async () => {
      const created = await call("POST", "/plants", { json: { id: 7, name: "Fern" } });
      const etag = created.headers.get("etag");
      expect(etag).toMatch(/^"[\x21\x23-\x7e]+"$/);
      expect((await get("7")).headers.get("etag")).toBe(etag);
      expect((await put("7", { name: "Fern" })).headers.get("etag")).toBe(etag);
    });

    test("changes whenever the plant changes, and depends on the id, the name and the tag", async () => {
      await t.createPlant("7", "Fern", token);
      await t.createPlant("8", "Fern", token);
      const first = await etagOf("7");
      expect(await etagOf("8")).not.toBe(first);
      const renamed = (await patch("7", { name: "Ivy" })).headers.get("etag") as string;
      expect(renamed).not.toBe(first);
      expect(await etagOf("7")).toBe(renamed);
      const tagged = (await patch("7", { tag: "" })).headers.get("etag") as string;
      expect(tagged).not.toBe(renamed);
      expect(await etagOf("7")).toBe(tagged);
    });

    test("is the same for the same plant of another owner (it is derived from the content)", async () => {
      const bob = await t.tokenFor("bob");
      await t.createPlant("7", "Fern", token);
      await t.createPlant("7", "Fern", bob);
      expect((await get("7", { as: bob })).headers.get("etag")).toBe(await etagOf("7"));
    });

    test("If-None-Match matching on GET: 304, no body, the ETag again; otherwise 200", async () => {
      await t.createPlant("7", "Fern", token);
      const etag = await etagOf("7");
      for (const header of [etag, `"other", ${etag}`, `W/${etag}`, "*"]) {
        const response = await get("7", { headers: { "if-none-match": header } });
        expect(response.status).toBe(304);
        expect(response.headers.get("etag")).toBe(etag);
        expect(await response.text()).toBe("");
      }
      const changed = await get("7", { headers: { "if-none-match": '"other"' } });
      expect(changed.status).toBe(200);
      expect(await changed.json()).toEqual({ name: "Fern" });
      await expectError(await get("8", { headers: { "if-none-match": "*" } }), 404);
    });
  });

  describe("If-Match", () => {
    beforeEach(async () => {
      await t.createPlant("7", "Fern", token);
    });

    test("a listed current ETag lets PUT, PATCH and DELETE through", async () => {
      let etag = await etagOf("7");
      const patched = await patch("7", { name: "Ivy" }, ifMatch(`"stale", ${etag}`));
      expect(patched.status).toBe(200);
      etag = patched.headers.get("etag") as string;
      const replaced = await put("7", { name: "Rose" }, ifMatch(etag));
      expect(replaced.status).toBe(200);
      expect((await call("DELETE", "/plants/7", ifMatch(replaced.headers.get("etag") as string))).status).toBe(204);
      await expectError(await get("7"), 404);
    });

    test("no listed tag matching, or a weak tag: 412 with the Error body, nothing changed", async () => {
      const etag = await etagOf("7");
      for (const header of ['"stale"', `W/${etag}`, "garbage", `"a", W/${etag}`]) {
        await expectError(await patch("7", { name: "Ivy" }, ifMatch(header)), 412);
        await expectError(await put("7", { name: "Ivy" }, ifMatch(header)), 412);
        await expectError(await call("DELETE", "/plants/7", ifMatch(header)), 412);
      }
      expect(await stored("7")).toEqual({ name: "Fern" });
    });

    test("an old ETag after someone else's change: 412", async () => {
      const etag = await etagOf("7");
      expect((await patch("7", { name: "Theirs" }, ifMatch(etag))).status).toBe(200);
      await expectError(await patch("7", { name: "Mine" }, ifMatch(etag)), 412);
      await expectError(await call("DELETE", "/plants/7", ifMatch(etag)), 412);
      expect(await stored("7")).toEqual({ name: "Theirs" });
    });

    test("* matches any existing plant, and is 404 for a missing one", async () => {
      expect((await patch("7", { tag: "t" }, ifMatch("*"))).status).toBe(200);
      expect((await put("7", { name: "Ivy" }, ifMatch("*"))).status).toBe(200);
      await expectError(await patch("8", { name: "Ivy" }, ifMatch("*")), 404);
      expect((await call("DELETE", "/plants/7", ifMatch("*"))).status).toBe(204);
      await expectError(await call("DELETE", "/plants/7", ifMatch("*")), 404);
    });

    test("a plant that is not the caller's: 404 whatever the header", async () => {
      const bob = await t.tokenFor("bob");
      await t.createPlant("9", "Bob's", bob);
      const theirs = (await get("9", { as: bob })).headers.get("etag") as string;
      for (const header of [theirs, '"stale"', "*"]) {
        await expectError(await patch("9", { name: "Mine" }, ifMatch(header)), 404);
        await expectError(await put("9", { name: "Mine" }, ifMatch(header)), 404);
        await expectError(await call("DELETE", "/plants/9", ifMatch(header)), 404);
      }
      expect(await stored("9", bob)).toEqual({ name: "Bob's" });
    });

    test("20 PATCHes racing with the same If-Match: exactly one 200, 19 × 412, the winner's plant stored", async () => {
      const etag = await etagOf("7");
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => patch("7", { name: `Writer ${i}`, tag: `${i}` }, ifMatch(etag))),
      );
      const statuses = answers.map((answer) => answer.status);
      expect(statuses.filter((status) => status === 200)).toHaveLength(1);
      expect(statuses.filter((status) => status === 412)).toHaveLength(19);
      const winner = answers.find((answer) => answer.status === 200) as Response;
      const won = await winner.json();
      expect(await stored("7")).toEqual(won);
      expect(await etagOf("7")).toBe(winner.headers.get("etag") as string);
    });

    test("a PATCH and a DELETE racing with the same If-Match: exactly one succeeds", async () => {
      const etag = await etagOf("7");
      const [patched, deleted] = await Promise.all([
        patch("7", { name: "Ivy" }, ifMatch(etag)),
        call("DELETE", "/plants/7", ifMatch(etag)),
      ]);
      // The PATCH that loses to the DELETE finds no plant: 404, as for any plant that is not there.
      if (patched.status === 200) expect(deleted.status).toBe(412);
      else expect([patched.status, deleted.status]).toEqual([404, 204]);
    });
  });
});
