import { beforeEach, describe, expect, test } from "bun:test";
import { expectError, makeTestApp, onSqlite, type TestApp } from "../support/helpers";

const MIN = "-9223372036854775808";
const MAX = "9223372036854775807";

let t: TestApp;
let token: string;
beforeEach(async () => {
  t = await makeTestApp();
  token = await t.tokenFor("alice");
});

/** Creates a plant from raw JSON (exact ids) with an optional tag. */
async function create(id: string, tag?: string, as = token) {
  const tagPart = tag === undefined ? "" : `,"tag":${JSON.stringify(tag)}`;
  const response = await t.call("POST", "/plants", { token: as, json: `{"id":${id},"name":"p${id}"${tagPart}}` });
  expect(response.status).toBe(200);
}

const get = (path: string, as = token, headers: Record<string, string> = {}) =>
  t.call("GET", path, { token: as, headers });

/** The `next` target of a Link header, or undefined. */
function nextOf(response: Response): string | undefined {
  const link = response.headers.get("link");
  if (link === null) return undefined;
  const match = /^<([^>]+)>; rel="next"$/.exec(link);
  expect(match).not.toBeNull();
  return match?.[1];
}

/** Follows `next` from `first`, returning the names in the order received; `between` runs between pages. */
async function walk(first: string, between: (page: number) => Promise<void> = async () => {}) {
  const names: string[] = [];
  let path: string | undefined = first;
  for (let page = 0; path !== undefined; page++) {
    const response = await get(path);
    expect(response.status).toBe(200);
    const plants = (await response.json()) as Array<{ name: string }>;
    names.push(...plants.map((plant) => plant.name));
    path = nextOf(response);
    if (path !== undefined) {
      expect(path).toStartWith("/plants?");
      await between(page);
    }
    if (page > 10_000) throw new Error("the walk does not end");
  }
  return names;
}

describe("GET /plants paging with limit, after and Link", () => {
  const ids = [
    MIN,
    "-9007199254740993",
    "-1",
    "0",
    "1",
    "9007199254740992",
    "9007199254740993",
    "9223372036854775806",
    MAX,
  ];

  test("following next from the first page yields every plant once, in id order, int64 ends included", async () => {
    for (const id of [...ids].reverse()) await create(id);
    for (const limit of [1, 2, 3, 4, 9, 10]) {
      expect(await walk(`/plants?limit=${limit}`)).toEqual(ids.map((id) => `p${id}`));
    }
  });

  test("the link names the last plant returned, exactly; the last page has none", async () => {
    for (const id of ids) await create(id);
    const first = await get("/plants?limit=2");
    expect(first.headers.get("link")).toBe('</plants?limit=2&after=-9007199254740993>; rel="next"');
    const nearEnd = await get(`/plants?limit=2&after=9007199254740993`);
    expect(await nearEnd.json()).toEqual([{ name: "p9223372036854775806" }, { name: `p${MAX}` }]);
    expect(nearEnd.headers.get("link")).toBeNull();
    const exact = await get("/plants?limit=9");
    expect(exact.headers.get("link")).toBeNull();
    const past = await get(`/plants?limit=5&after=${MAX}`);
    expect(await past.json()).toEqual([]);
    expect(past.headers.get("link")).toBeNull();
  });

  test("no Link without limit or with limit=0, even when plants match", async () => {
    for (const id of ["1", "2", "3"]) await create(id);
    for (const path of ["/plants", "/plants?limit=0", "/plants?after=1"]) {
      expect((await get(path)).headers.get("link")).toBeNull();
    }
    expect(await (await get("/plants?after=1")).json()).toEqual([{ name: "p2" }, { name: "p3" }]);
  });

  test("from any first page (any after), the walk yields every later plant once, while others come and go", async () => {
    const stable = Array.from({ length: 40 }, (_, i) => String(i * 10));
    for (const id of stable) await create(id);
    let churn = 0;
    for (const start of ["-1", "0", "95", "200", "390"]) {
      const names = await walk(`/plants?limit=3&after=${start}`, async (page) => {
        // Between pages: a new plant before and after the cursor, and one of those removed again.
        const before = String(-1000 - churn);
        const after = String(5 + churn * 10);
        churn++;
        await create(before);
        await create(after);
        if (page % 2 === 0) expect((await t.call("DELETE", `/plants/${before}`, { token })).status).toBe(204);
      });
      const expected = stable.filter((id) => BigInt(id) > BigInt(start)).map((id) => `p${id}`);
      const stableSeen = names.filter((name) => expected.includes(name));
      expect(stableSeen).toEqual(expected);
      expect(new Set(names).size).toBe(names.length);
      const ids = names.map((name) => BigInt(name.slice(1)));
      expect(ids).toEqual([...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    }
  });

  test("a Host header never shows in a link", async () => {
    for (const id of ["1", "2"]) await create(id);
    const response = await get("/plants?limit=1", token, { host: "evil.example", "x-forwarded-host": "evil.example" });
    expect(response.headers.get("link")).toBe('</plants?limit=1&after=1>; rel="next"');
  });

  test.if(onSqlite)("a page longer than one chunk ends at its limit, with the link naming its last plant", async () => {
    const insert = t.sqlite.prepare("INSERT INTO plants (owner_id, id, name) VALUES (1, ?, ?)");
    t.sqlite.transaction(() => {
      for (let i = 1; i <= 2_500; i++) insert.run(i, `p${i}`);
    })();
    const response = await get("/plants?limit=1500&after=100");
    const plants = (await response.json()) as Array<{ name: string }>;
    expect(plants.length).toBe(1500);
    expect(plants[0]?.name).toBe("p101");
    expect(plants.at(-1)?.name).toBe("p1600");
    expect(response.headers.get("link")).toBe('</plants?limit=1500&after=1600>; rel="next"');
    const last = await get("/plants?limit=1500&after=1600");
    expect(((await last.json()) as unknown[]).length).toBe(900);
    expect(last.headers.get("link")).toBeNull();
  });
});

describe("GET /plants?tag=", () => {
  test("only plants whose tag is exactly the one given: case-sensitive, a plant without a tag never matches", async () => {
    await create("1", "Green");
    await create("2", "green");
    await create("3");
    await create("4", "");
    await create("5", "green");
    expect(await (await get("/plants?tag=green")).json()).toEqual([
      { name: "p2", tag: "green" },
      { name: "p5", tag: "green" },
    ]);
    expect(await (await get("/plants?tag=")).json()).toEqual([{ name: "p4", tag: "" }]);
    expect(await (await get("/plants?tag=GREEN")).json()).toEqual([]);
  });

  test("combines with limit and after, and the link keeps the tag, percent-encoded", async () => {
    const tag = "a&b=c d/é#";
    for (let i = 1; i <= 7; i++) await create(String(i), i % 2 === 0 ? "other" : tag);
    const first = await get(`/plants?limit=2&tag=${encodeURIComponent(tag)}`);
    expect(await first.json()).toEqual([
      { name: "p1", tag },
      { name: "p3", tag },
    ]);
    expect(first.headers.get("link")).toBe(`</plants?limit=2&after=3&tag=${encodeURIComponent(tag)}>; rel="next"`);
    expect(await walk(`/plants?limit=1&tag=${encodeURIComponent(tag)}`)).toEqual(["p1", "p3", "p5", "p7"]);
    expect(await walk(`/plants?limit=2&after=3&tag=other`)).toEqual(["p4", "p6"]);
  });

  test("another user's plants never match", async () => {
    const bob = await t.tokenFor("bob");
    await create("1", "shared", bob);
    await create("2", "shared");
    expect(await (await get("/plants?tag=shared")).json()).toEqual([{ name: "p2", tag: "shared" }]);
  });

  test("a tag past 256 characters is 400 naming tag", async () => {
    const message = await expectError(await get(`/plants?tag=${"x".repeat(257)}`), 400);
    expect(message).toBe("tag: must be a string of 0 to 256 characters");
  });

  test("a tag holding U+0000 is 400 naming tag, on every engine", async () => {
    const message = await expectError(await get("/plants?limit=5&tag=a%00b"), 400);
    expect(message).toBe("tag: must not contain the character U+0000");
  });
});

describe("bad paging parameters", () => {
  test.each(["abc", "1.5", "1e3", "0x10", " 1", "+1", "9223372036854775808", "-9223372036854775809", ""])(
    "after=%p is 400 naming after and its rule",
    async (value) => {
      const message = await expectError(await get(`/plants?after=${encodeURIComponent(value)}`), 400);
      expect(message).toBe("after: must be an integer between -9223372036854775808 and 9223372036854775807");
    },
  );

  test.each(["offset", "page", "cursor", "LIMIT", "access_token"])(
    "an unknown parameter (%s) is 400 naming it and pointing to after and Link",
    async (name) => {
      const message = await expectError(await get(`/plants?${name}=20`), 400);
      expect(message).toBe(
        `${name}: unknown query parameter; this operation takes limit, after, tag and fields. To page, give limit and follow the Link header, or pass after=<the last id you have>`,
      );
    },
  );

  test("a repeated parameter is 400 rather than silently taking one of them", async () => {
    for (const query of ["limit=1&limit=2", "after=1&after=2", "tag=a&tag=b", "limit=1&tag=a&limit=1"]) {
      const name = query.split("=")[0];
      expect(await expectError(await get(`/plants?${query}`), 400)).toBe(`${name}: given more than once; give it once`);
    }
  });

  test("an unknown parameter whose name is not plain is refused without repeating it", async () => {
    const message = await expectError(await get(`/plants?${encodeURIComponent("<script>")}=1`), 400);
    expect(message).toStartWith("a parameter: unknown query parameter");
  });
});

describe("GET /plants/{id}", () => {
  test("the caller's plant, exact at the int64 ends; 404 for another user's or a missing one", async () => {
    await create(MAX, "top");
    await create(MIN);
    const bob = await t.tokenFor("bob");
    await create("7", "bob's", bob);
    expect(await (await get(`/plants/${MAX}`)).json()).toEqual({ name: `p${MAX}`, tag: "top" });
    expect(await (await get(`/plants/${MIN}`)).json()).toEqual({ name: `p${MIN}` });
    expect(await (await get("/plants/9223372036854775806")).text()).toContain('"error":404');
    const theirs = await get("/plants/7");
    expect(await expectError(theirs, 404)).toBe("id: you have no plant with this id");
    expect(await (await get("/plants/7", bob)).json()).toEqual({ name: "p7", tag: "bob's" });
  });

  test("a bad id is 400, no token is 401, and the 405 lists GET, PUT, PATCH, DELETE", async () => {
    expect(await expectError(await get("/plants/abc"), 400)).toBe(
      "id: must be an integer between -9223372036854775808 and 9223372036854775807",
    );
    await expectError(await t.call("GET", "/plants/1"), 401);
    const wrong = await t.call("POST", "/plants/1", { token, json: { id: 1, name: "x" } });
    expect(wrong.headers.get("allow")).toBe("GET, PUT, PATCH, DELETE");
    await expectError(wrong, 405);
  });
});

describe("CORS", () => {
  test("exposes Link to an allowed origin", async () => {
    const cors = await makeTestApp({ corsOrigins: ["https://app.example.com"] });
    const corsToken = await cors.tokenFor("alice");
    const response = await cors.call("GET", "/plants?limit=1", {
      token: corsToken,
      headers: { origin: "https://app.example.com" },
    });
    expect(response.headers.get("access-control-expose-headers")?.split(/,\s*/)).toContain("link");
  });
});
