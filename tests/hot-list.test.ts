/**
 * GET /plants's common form is answered before routing (src/plants/hot-list.ts). Whatever it
 * takes must be answered exactly as the route answers it: the same request to `/plants/`, which
 * the route serves and the hook never takes, is the reference.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { StoreUnavailable } from "../src/db/store-errors";
import { createRateLimiter } from "../src/http/rate-limit";
import { hotList } from "../src/plants/hot-list";
import { BASE, makeTestApp, onSqlite, type TestApp } from "./helpers";
import { authorizationParts, authorizationValue, queryParams, queryString } from "./hostile-arbitraries";

/** What a client sees of an answer, but for the request id and the date. */
async function seen(response: Response) {
  const headers = [...response.headers].filter(([name]) => name !== "x-request-id" && name !== "date").sort();
  return { status: response.status, headers, body: await response.text() };
}

/** The answer to `GET /plants<query>` and the route's own answer to `GET /plants/<query>`. */
async function bothWays(t: TestApp, query: string, headers: Record<string, string>) {
  const get = (path: string) => t.app.handle(new Request(`${BASE}${path}${query}`, { headers }));
  return { hot: await seen(await get("/plants")), route: await seen(await get("/plants/")) };
}

/** Alice's plants: ids across the range, some tagged, one with an empty tag. */
async function seeded() {
  const t = await makeTestApp();
  const token = await t.tokenFor("alice");
  const plants = [
    ["-9223372036854775808", "Oldest", "a"],
    ["-5", "Minus", undefined],
    ["1", "Fern", "a"],
    ["2", "Pothos", ""],
    ["3", "Ivy", "b~c"],
    ["9007199254740993", "Past 2^53", "a"],
    ["9223372036854775807", "Last", "b~c"],
  ] as const;
  for (const [id, name, tag] of plants) {
    const body = `{"id":${id},"name":"${name}"${tag === undefined ? "" : `,"tag":"${tag}"`}}`;
    expect((await t.call("POST", "/plants", { token, json: body })).status).toBe(200);
  }
  await t.tokenFor("bob");
  return { t, token };
}

/** A query in the form the hook takes, or close to it. */
const plainQuery = fc
  .record({
    limit: fc.option(fc.constantFrom("1", "2", "3", "007", "20", "1000", "1001", "0", "-1", "+5", "%35", "5 "), {
      nil: undefined,
    }),
    after: fc.option(
      fc.constantFrom("-9223372036854775808", "-6", "0", "1", "2", "9223372036854775807", "9223372036854775808", "01"),
      {
        nil: undefined,
      },
    ),
    tag: fc.option(fc.constantFrom("a", "", "b~c", "b%7Ec", "x y", "A", "a+b", "%61"), { nil: undefined }),
  })
  .chain((values) =>
    fc.shuffledSubarray(
      Object.entries(values)
        .filter(([, value]) => value !== undefined)
        .map(([name, value]) => `${name}=${value}`),
    ),
  )
  .map((pairs) => (pairs.length === 0 ? "" : `?${pairs.join("&")}`));

describe("GET /plants answered before routing", () => {
  test("answers every query and Authorization header exactly as the route does", async () => {
    const { t, token } = await seeded();
    const query = fc.oneof(
      { arbitrary: plainQuery, weight: 3 },
      { arbitrary: queryParams.map((params) => `?${queryString(params)}`), weight: 1 },
    );
    const authorization = fc.oneof(
      { arbitrary: fc.constant(`Bearer ${token}`), weight: 3 },
      { arbitrary: authorizationParts.map((parts) => authorizationValue(parts, token).value), weight: 1 },
    );
    await fc.assert(
      fc.asyncProperty(query, authorization, async (search, value) => {
        const { hot, route } = await bothWays(t, search, { authorization: value });
        expect(hot).toEqual(route);
      }),
      { numRuns: 300 },
    );
  });

  test("a page and its Link, a tag's Link, and the last page, as the route answers them", async () => {
    const { t, token } = await seeded();
    const authorization = `Bearer ${token}`;
    for (const query of ["?limit=2", "?limit=2&after=1", "?limit=1&tag=b~c", "?tag=a&limit=2&after=1", "?limit=1000"]) {
      const { hot, route } = await bothWays(t, query, { authorization });
      expect(hot.status).toBe(200);
      expect(hot).toEqual(route);
    }
    const { hot } = await bothWays(t, "?limit=1&tag=b~c", { authorization });
    expect(hot.headers).toContainEqual(["link", '</plants?limit=1&after=3&tag=b~c>; rel="next"']);
  });

  test("per-token and failed-authentication budgets are counted once per request, as the route counts them", async () => {
    const answersOn = async (path: string) => {
      const now = () => 1_800_000_000_000;
      const t = await makeTestApp({ rateLimitPerMinute: 2, authFailuresPerMinute: 2, now });
      const token = await t.tokenFor("alice");
      const answers = [];
      for (const value of [token, token, token, "pst_unknown", "pst_unknown", "pst_unknown", token]) {
        answers.push(await seen(await t.call("GET", `${path}?limit=5`, { token: value })));
      }
      return answers;
    };
    const hot = await answersOn("/plants");
    expect(hot.map((answer) => answer.status)).toEqual([200, 200, 429, 401, 401, 429, 429]);
    expect(hot[2]?.headers).toContainEqual(["retry-after", "30"]);
    expect(hot).toEqual(await answersOn("/plants/"));
  });

  test("a token store that fails (the database gone, a timeout, a held lock, the disk) gets the route's Error body, and the next read answers again", async () => {
    const { t, token } = await seeded();
    const { authenticate } = t.stores.tokens;
    const headers = { authorization: `Bearer ${token}` };
    for (const kind of ["unreachable", "timeout", "busy", "io"] as const) {
      const failure = new StoreUnavailable(kind);
      t.stores.tokens.authenticate = onSqlite
        ? () => {
            throw failure;
          }
        : () => Promise.reject(failure);
      const { hot, route } = await bothWays(t, "?limit=5", headers);
      expect(hot.status).toBe(503);
      expect(hot).toEqual(route);
    }
    t.stores.tokens.authenticate = authenticate;
    const { hot } = await bothWays(t, "?limit=1", headers);
    expect(hot.status).toBe(200);
  });

  test("with CORS on, a request from a browser (Origin) gets the route's CORS headers, and one without as the route answers it", async () => {
    const t = await makeTestApp({ corsOrigins: ["https://app.example"] });
    const token = await t.tokenFor("alice");
    const headers = { authorization: `Bearer ${token}`, origin: "https://app.example" };
    const { hot, route } = await bothWays(t, "?limit=5", headers);
    expect(hot).toEqual(route);
    expect(hot.headers).toContainEqual(["access-control-allow-origin", "https://app.example"]);
    // Without an Origin (a server-side client) the hook answers, with whatever CORS adds then.
    const plain = await bothWays(t, "?limit=5", { authorization: `Bearer ${token}` });
    expect(plain.hot).toEqual(plain.route);
    expect(plain.hot.status).toBe(200);
  });

  test("the hook takes the common form only, and only GET", async () => {
    const { t, token } = await seeded();
    const hot = hotList({
      plants: t.stores.plants,
      tokens: t.stores.tokens,
      limits: { perToken: createRateLimiter(0, Date.now), failuresPerClient: createRateLimiter(0, Date.now) },
      notes: new WeakMap(),
      cors: false,
      answerFault: t.app.answerFault,
    });
    const takes = (path: string, method = "GET") =>
      hot(new Request(`${BASE}${path}`, { method, headers: { authorization: `Bearer ${token}` } }), { headers: {} }) !==
      undefined;
    for (const path of [
      "/plants?limit=20",
      "/plants?limit=1&after=-5&tag=a-b_c.d~",
      "/plants?tag=&limit=007",
      "/plants?after=9223372036854775807&limit=1000",
      "/plants?after=-9223372036854775808&limit=1",
    ])
      expect({ path, taken: takes(path) }).toEqual({ path, taken: true });
    for (const path of [
      "/plants",
      "/plants?",
      "/plants?limit=0",
      "/plants?limit=1001",
      "/plants/?limit=5",
      "/plantsx?limit=5",
      "/plants?limit=5&limit=5",
      "/plants?limit=5&offset=1",
      "/plants?limit=5&tag=a%20b",
      "/plants?limit=5&tag=a+b",
      "/plants?limit=5&after=9223372036854775808",
      "/plants?limit=5&after=01234567890123456789",
      "/plants?limit=5&",
      "/plants?limit",
      "/plants?limit=+5",
    ])
      expect({ path, taken: takes(path) }).toEqual({ path, taken: false });
    for (const method of ["HEAD", "POST", "DELETE", "OPTIONS"])
      expect({ method, taken: takes("/plants?limit=5", method) }).toEqual({ method, taken: false });
  });
});
