import { beforeEach, describe, expect, test } from "bun:test";
import { expectError, makeTestApp, type TestApp } from "../support/helpers";

const INT64_MAX = "9223372036854775807";
const INT64_MAX_MINUS_1 = "9223372036854775806";
const INT64_MIN = "-9223372036854775808";

describe("POST /plants", () => {
  let t: TestApp;
  let token: string;

  beforeEach(async () => {
    t = await makeTestApp();
    token = await t.tokenFor("alice");
  });

  const create = (json: unknown, init: { token?: string } = {}) =>
    t.call("POST", "/plants", { token: init.token ?? token, json });
  const list = async (as = token) => {
    const response = await t.call("GET", "/plants", { token: as });
    expect(response.status).toBe(200);
    return response.json();
  };

  describe("success", () => {
    test("returns 200 with the Plant: name and tag, never the id", async () => {
      const response = await create({ id: 1, name: "Monstera", tag: "tropical" });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toStartWith("application/json");
      expect(await response.json()).toEqual({ name: "Monstera", tag: "tropical" });
    });

    test("leaves tag out when none is given (never null)", async () => {
      const response = await create({ id: 1, name: "Fern" });
      expect(response.status).toBe(200);
      const text = await response.text();
      expect(JSON.parse(text)).toEqual({ name: "Fern" });
      expect(text).not.toContain("null");
      expect(text).not.toContain("tag");
      expect(await list()).toEqual([{ name: "Fern" }]);
    });

    test('keeps an empty tag "" as given', async () => {
      const response = await create({ id: 1, name: "Fern", tag: "" });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ name: "Fern", tag: "" });
      expect(await list()).toEqual([{ name: "Fern", tag: "" }]);
    });

    test("the created plant is listed for its owner", async () => {
      expect((await create({ id: 3, name: "Cactus", tag: "desert" })).status).toBe(200);
      expect(await list()).toEqual([{ name: "Cactus", tag: "desert" }]);
    });

    test("unknown extra fields are ignored and not stored", async () => {
      const response = await create({ id: 1, name: "Fern", colour: "green", owner: "mallory", nested: { a: 1 } });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ name: "Fern" });
      expect(await list()).toEqual([{ name: "Fern" }]);
    });
  });

  describe("id", () => {
    test("the largest int64 is accepted", async () => {
      const response = await create(`{"id":${INT64_MAX},"name":"max"}`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ name: "max" });
    });

    test("the smallest int64 is accepted", async () => {
      const response = await create(`{"id":${INT64_MIN},"name":"min"}`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ name: "min" });
      await expectError(await create(`{"id":${INT64_MIN},"name":"again"}`), 409);
    });

    test("9223372036854775807 and 9223372036854775806 are two different plants, kept exactly", async () => {
      expect((await create(`{"id":${INT64_MAX},"name":"max"}`)).status).toBe(200);
      expect((await create(`{"id":${INT64_MAX_MINUS_1},"name":"max-1"}`)).status).toBe(200);
      expect(await list()).toEqual([{ name: "max-1" }, { name: "max" }]);

      await expectError(await create(`{"id":${INT64_MAX},"name":"again"}`), 409);
      await expectError(await create(`{"id":${INT64_MAX_MINUS_1},"name":"again"}`), 409);
      // 2^53 neighbours are not confused either.
      expect((await create('{"id":9007199254740993,"name":"2^53+1"}')).status).toBe(200);
      expect((await create('{"id":9007199254740992,"name":"2^53"}')).status).toBe(200);
      expect(await list()).toEqual([{ name: "2^53" }, { name: "2^53+1" }, { name: "max-1" }, { name: "max" }]);
    });

    test('an id given as a JSON string ("7") is 400', async () => {
      const message = await expectError(await create({ id: "7", name: "Fern" }), 400);
      expect(message).toStartWith("id:");
      expect(await list()).toEqual([]);
    });

    test("a fractional id (7.5) is 400", async () => {
      expect(await expectError(await create('{"id":7.5,"name":"Fern"}'), 400)).toStartWith("id:");
    });

    test("an id just outside the int64 range is 400", async () => {
      expect(await expectError(await create('{"id":9223372036854775808,"name":"Fern"}'), 400)).toStartWith("id:");
      expect(await expectError(await create('{"id":-9223372036854775809,"name":"Fern"}'), 400)).toStartWith("id:");
      expect(await expectError(await create('{"id":1e30,"name":"Fern"}'), 400)).toStartWith("id:");
      expect(await list()).toEqual([]);
    });

    test("an id of another type (null, boolean, object) or a missing id is 400", async () => {
      for (const id of [null, true, { value: 7 }, [7]]) {
        expect(await expectError(await create({ id, name: "Fern" }), 400)).toStartWith("id:");
      }
      expect(await expectError(await create({ name: "Fern" }), 400)).toStartWith("id:");
    });

    test("integer-valued literals 7.0 and 7e0 are the integer 7", async () => {
      expect((await create('{"id":7.0,"name":"seven"}')).status).toBe(200);
      await expectError(await create('{"id":7e0,"name":"again"}'), 409);
      await expectError(await create('{"id":7,"name":"again"}'), 409);
      expect(await list()).toEqual([{ name: "seven" }]);
    });
  });

  describe("name", () => {
    test("256 characters are accepted", async () => {
      const name = "n".repeat(256);
      const response = await create({ id: 1, name });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ name });
    });

    test("257 characters are 400", async () => {
      expect(await expectError(await create({ id: 1, name: "n".repeat(257) }), 400)).toStartWith("name:");
    });

    test("256 emoji are accepted: characters are code points", async () => {
      const name = "🌵".repeat(256);
      const response = await create({ id: 1, name });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ name });
      expect(await list()).toEqual([{ name }]);
      expect(await expectError(await create({ id: 2, name: "🌵".repeat(257) }), 400)).toStartWith("name:");
    });

    test('an empty name "" is 400', async () => {
      expect(await expectError(await create({ id: 1, name: "" }), 400)).toStartWith("name:");
    });

    test("a null name is 400", async () => {
      expect(await expectError(await create({ id: 1, name: null }), 400)).toStartWith("name:");
    });

    test("a number as name is 400", async () => {
      expect(await expectError(await create({ id: 1, name: 42 }), 400)).toStartWith("name:");
    });

    test("a missing name is 400", async () => {
      expect(await expectError(await create({ id: 1 }), 400)).toStartWith("name:");
      expect(await list()).toEqual([]);
    });

    test("a lone surrogate (\\ud800) in the name is 400", async () => {
      expect(await expectError(await create('{"id":1,"name":"a\\ud800b"}'), 400)).toStartWith("name:");
      expect(await list()).toEqual([]);
    });
  });

  describe("tag", () => {
    test("256 characters are accepted", async () => {
      const tag = "t".repeat(256);
      const response = await create({ id: 1, name: "Fern", tag });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ name: "Fern", tag });
    });

    test("257 characters are 400", async () => {
      expect(await expectError(await create({ id: 1, name: "Fern", tag: "t".repeat(257) }), 400)).toStartWith("tag:");
    });

    test("a null tag is 400", async () => {
      expect(await expectError(await create({ id: 1, name: "Fern", tag: null }), 400)).toStartWith("tag:");
      expect(await list()).toEqual([]);
    });

    test("a number as tag is 400", async () => {
      expect(await expectError(await create({ id: 1, name: "Fern", tag: 5 }), 400)).toStartWith("tag:");
    });
  });

  describe("duplicates and owners", () => {
    test("an id the caller already owns is 409 and the stored plant is unchanged", async () => {
      expect((await create({ id: 7, name: "Original", tag: "first" })).status).toBe(200);
      const message = await expectError(await create({ id: 7, name: "Replacement" }), 409);
      expect(message).not.toContain("Replacement");
      await expectError(await create({ id: 7, name: "Other", tag: "second" }), 409);
      expect(await list()).toEqual([{ name: "Original", tag: "first" }]);
    });

    test("two users may each own a plant with id 7", async () => {
      const bob = await t.tokenFor("bob");
      expect((await create({ id: 7, name: "Alice's" })).status).toBe(200);
      const response = await create({ id: 7, name: "Bob's" }, { token: bob });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ name: "Bob's" });
      expect(await list()).toEqual([{ name: "Alice's" }]);
      expect(await list(bob)).toEqual([{ name: "Bob's" }]);
    });
  });

  describe("body", () => {
    test("malformed JSON is 400", async () => {
      expect(await expectError(await create('{"id":1,"name":'), 400)).toStartWith("body:");
      expect(await expectError(await create("{id:1}"), 400)).toStartWith("body:");
    });

    test("no body is 400", async () => {
      const response = await t.call("POST", "/plants", { token, headers: { "content-type": "application/json" } });
      expect(await expectError(response, 400)).toStartWith("body:");
      await expectError(await t.call("POST", "/plants", { token }), 400);
    });

    test.each([
      ["an array", '[{"id":1,"name":"Fern"}]'],
      ["a number", "7"],
      ["a string", '"Fern"'],
      ["null", "null"],
      ["a boolean", "true"],
    ])("a JSON body that is %s, not an object, is 400 with a message starting 'body:'", async (_kind, json) => {
      expect(await expectError(await create(json), 400)).toStartWith("body:");
      expect(await list()).toEqual([]);
    });

    test("a text/plain body is 415", async () => {
      const response = await t.call("POST", "/plants", {
        token,
        body: JSON.stringify({ id: 1, name: "Fern" }),
        headers: { "content-type": "text/plain" },
      });
      await expectError(response, 415);
      expect(await list()).toEqual([]);
    });

    test("application/json with a charset parameter is accepted", async () => {
      const response = await t.call("POST", "/plants", {
        token,
        json: { id: 1, name: "Fern" },
        headers: { "content-type": "application/json; charset=utf-8" },
      });
      expect(response.status).toBe(200);
    });

    test("a declared Content-Length over 64 KiB is 413 with the Error body", async () => {
      const name = "x".repeat(70 * 1024);
      const response = await t.call("POST", "/plants", {
        token,
        json: { id: 1, name },
        headers: { "content-length": String(Buffer.byteLength(JSON.stringify({ id: 1, name }))) },
      });
      await expectError(response, 413);
      expect(await list()).toEqual([]);
    });

    test("a body of exactly 64 KiB is not refused for its size", async () => {
      const prefix = '{"id":1,"name":"Fern","padding":"';
      const suffix = '"}';
      const body = prefix + "p".repeat(64 * 1024 - prefix.length - suffix.length) + suffix;
      expect(body.length).toBe(64 * 1024);
      const response = await t.call("POST", "/plants", {
        token,
        json: body,
        headers: { "content-length": String(body.length) },
      });
      expect(response.status).toBe(200);
    });

    test("a body over the limit is 413 (app with a 2 KiB limit, 4 KiB body)", async () => {
      const small = await makeTestApp({ bodyLimitBytes: 2048 });
      const smallToken = await small.tokenFor("alice");
      const body = JSON.stringify({ id: 1, name: "Fern", padding: "p".repeat(4096) });

      const declared = await small.call("POST", "/plants", { token: smallToken, json: body });
      await expectError(declared, 413);

      // Streamed without a declared length.
      const stream = new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(body));
          controller.close();
        },
      });
      const chunked = await small.app.handle(
        new Request("http://localhost/plants", {
          method: "POST",
          headers: { authorization: `Bearer ${smallToken}`, "content-type": "application/json" },
          body: stream,
          duplex: "half",
        } as RequestInit),
      );
      expect(chunked.status).toBe(413);

      const listed = await small.call("GET", "/plants", { token: smallToken });
      expect(await listed.json()).toEqual([]);
    });
  });

  describe("validation messages", () => {
    test("name the field and never echo the input", async () => {
      const longName = "Z".repeat(300);
      const nameMessage = await expectError(await create({ id: 1, name: longName }), 400);
      expect(nameMessage).toStartWith("name:");
      expect(nameMessage).not.toContain("ZZZ");

      const idMessage = await expectError(await create({ id: "secret-ish-value", name: "Fern" }), 400);
      expect(idMessage).toStartWith("id:");
      expect(idMessage).not.toContain("secret-ish-value");

      const tagMessage = await expectError(await create({ id: 1, name: "Fern", tag: "T".repeat(300) }), 400);
      expect(tagMessage).toStartWith("tag:");
      expect(tagMessage).not.toContain("TTT");

      const bodyMessage = await expectError(await create('{"id":1,"name":"hunter2-secret'), 400);
      expect(bodyMessage).not.toContain("hunter2");
    });

    test("state the rule", async () => {
      expect(await expectError(await create({ id: 1, name: "" }), 400)).toBe(
        "name: must be a string of 1 to 256 characters",
      );
      expect(await expectError(await create({ id: 1.5, name: "Fern" }), 400)).toBe(
        "id: must be an integer between -9223372036854775808 and 9223372036854775807",
      );
    });

    // PostgreSQL's text cannot hold U+0000 (it answered 500 there, 200 on SQLite): both refuse it.
    test("a name or tag holding U+0000 is 400 on every engine, and nothing is stored", async () => {
      expect(await expectError(await create('{"id":1,"name":"a\\u0000b"}'), 400)).toBe(
        "name: must not contain the character U+0000",
      );
      expect(await expectError(await create('{"id":1,"name":"Fern","tag":"\\u0000"}'), 400)).toBe(
        "tag: must not contain the character U+0000",
      );
      const listed = await t.call("GET", "/plants", { token });
      expect(await listed.json()).toEqual([]);
      expect((await create('{"id":1,"name":"a\\u0001b","tag":"\\u007f"}')).status).toBe(200);
    });
  });
});
