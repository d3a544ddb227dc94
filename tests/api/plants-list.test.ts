import { beforeEach, describe, expect, test } from "bun:test";
import { makeTestApp, onPostgres, type TestApp } from "../support/helpers";

const LIMIT_MESSAGE = "limit: must be an integer between 0 and 2147483647";

describe("GET /plants", () => {
  let t: TestApp;
  let token: string;

  beforeEach(async () => {
    t = await makeTestApp();
    token = await t.tokenFor("alice");
  });

  const create = (id: string, name: string, as = token) => t.createPlant(id, name, as);

  const list = (query = "", as = token) => t.call("GET", `/plants${query}`, { token: as });

  async function listOk(query = "", as = token) {
    const response = await list(query, as);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toStartWith("application/json");
    return response.json();
  }

  // docs/decisions/0005-async-reads.md: on SQLite the auth hook and the list route must stay
  // compiled synchronous (Elysia decides from their source text); PostgreSQL answers through a promise.
  test("a page is answered at once on SQLite, through a promise on PostgreSQL, the same page either way", async () => {
    await create("1", "Fern");
    const asked = new Request("http://localhost/plants?limit=20", { headers: { authorization: `Bearer ${token}` } });
    const answer = t.app.fetch(asked);
    expect(answer instanceof Promise).toBe(onPostgres);
    const response = await answer;
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual([{ name: "Fern" }]);
  });

  test("a new user gets an empty array", async () => {
    expect(await listOk()).toEqual([]);
  });

  test("returns every plant as a Plant (name, tag when set), without ids or nulls", async () => {
    expect((await t.call("POST", "/plants", { token, json: { id: 2, name: "Ivy", tag: "climber" } })).status).toBe(200);
    expect((await t.call("POST", "/plants", { token, json: { id: 1, name: "Fern" } })).status).toBe(200);
    const response = await list();
    const text = await response.text();
    expect(JSON.parse(text)).toEqual([{ name: "Fern" }, { name: "Ivy", tag: "climber" }]);
    expect(text).not.toContain("null");
    expect(text).not.toContain('"id"');
  });

  test("plants are ordered by id ascending, including negative and huge ids", async () => {
    const ids = [
      "9223372036854775807",
      "-1",
      "42",
      "-9223372036854775808",
      "0",
      "9223372036854775806",
      "9007199254740993",
      "-9007199254740993",
      "7",
      "9007199254740992",
    ];
    // Inserted in a shuffled but fixed order, named after their id.
    for (const id of ids) await create(id, `p${id}`);
    const sorted = [...ids].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0));
    expect(await listOk()).toEqual(sorted.map((id) => ({ name: `p${id}` })));
  });

  describe("limit", () => {
    beforeEach(async () => {
      for (const id of ["30", "-5", "10", "20"]) await create(id, `p${id}`);
    });

    test("limit=0 returns an empty array", async () => {
      expect(await listOk("?limit=0")).toEqual([]);
    });

    test("limit=2 returns the first two plants by id", async () => {
      expect(await listOk("?limit=2")).toEqual([{ name: "p-5" }, { name: "p10" }]);
    });

    test("a limit above the number of plants returns them all", async () => {
      expect(await listOk("?limit=100")).toEqual([{ name: "p-5" }, { name: "p10" }, { name: "p20" }, { name: "p30" }]);
    });

    test("limit=2147483647 is accepted", async () => {
      expect(await listOk("?limit=2147483647")).toEqual([
        { name: "p-5" },
        { name: "p10" },
        { name: "p20" },
        { name: "p30" },
      ]);
    });

    test("without limit every plant is returned", async () => {
      expect(await listOk()).toHaveLength(4);
    });

    test.each([
      ["negative", "-1"],
      ["a fraction", "1.5"],
      ["text", "abc"],
      ["too large", "2147483648"],
      ["empty", ""],
      ["hexadecimal", "0x10"],
      ["with a leading space", "%205"],
      ["in exponent form", "1e3"],
      ["far too large", "99999999999999999999999"],
    ])("a limit that is %s (%s) is 400 naming limit and its rule", async (_kind, value) => {
      const response = await list(`?limit=${value}`);
      expect(response.status).toBe(400);
      expect(response.headers.get("content-type")).toStartWith("application/json");
      expect(await response.json()).toEqual({ error: 400, message: LIMIT_MESSAGE });
    });

    test("the 400 message never echoes the limit sent", async () => {
      const response = await list("?limit=secret-ish-value");
      expect(response.status).toBe(400);
      const text = await response.text();
      expect(text).not.toContain("secret-ish-value");
      expect(JSON.parse(text)).toEqual({ error: 400, message: LIMIT_MESSAGE });
    });
  });

  test("only the caller's plants are listed", async () => {
    const bob = await t.tokenFor("bob");
    await create("1", "Alice's fern");
    await create("3", "Alice's ivy");
    await create("1", "Bob's fern", bob);
    await create("2", "Bob's cactus", bob);
    expect(await listOk()).toEqual([{ name: "Alice's fern" }, { name: "Alice's ivy" }]);
    expect(await listOk("", bob)).toEqual([{ name: "Bob's fern" }, { name: "Bob's cactus" }]);
    expect(await listOk("", await t.tokenFor("carol"))).toEqual([]);
  });

  test("a limit applies to the caller's plants only", async () => {
    const bob = await t.tokenFor("bob");
    await create("1", "Bob's", bob);
    await create("5", "Alice's 5");
    await create("6", "Alice's 6");
    expect(await listOk("?limit=1")).toEqual([{ name: "Alice's 5" }]);
  });
});
