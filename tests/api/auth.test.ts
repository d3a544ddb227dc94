import { beforeEach, describe, expect, test } from "bun:test";
import { makeTestApp, onSqlite, type TestApp } from "../support/helpers";

const MISSING = "Bearer";
const INVALID = 'Bearer error="invalid_token"';

/** A 401 with the Error body and the given WWW-Authenticate challenge. */
async function expect401(response: Response, challenge: string) {
  expect(response.status).toBe(401);
  expect(response.headers.get("www-authenticate")).toBe(challenge);
  expect(response.headers.get("content-type")).toStartWith("application/json");
  const body = (await response.json()) as { error: number; message: string };
  expect(body).toEqual({ error: 401, message: expect.any(String) });
  expect(body.message.length).toBeGreaterThan(0);
  return body;
}

const withAuthorization = (value: string) => ({ headers: { authorization: value } });

describe("authentication", () => {
  let t: TestApp;
  let token: string;

  beforeEach(async () => {
    t = await makeTestApp();
    token = await t.tokenFor("alice");
  });

  test("a valid bearer token is accepted", async () => {
    const response = await t.call("GET", "/plants", { token });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual([]);
  });

  test("a missing Authorization header gets 401 with WWW-Authenticate: Bearer", async () => {
    await expect401(await t.call("GET", "/plants"), MISSING);
  });

  test("another scheme (Basic) gets 401 as if no token were given", async () => {
    const basic = `Basic ${Buffer.from(`alice:${token}`).toString("base64")}`;
    await expect401(await t.call("GET", "/plants", withAuthorization(basic)), MISSING);
  });

  test("the token glued to the scheme (BearerXYZ, no space) is not a bearer token", async () => {
    await expect401(await t.call("GET", "/plants", withAuthorization("BearerXYZ")), MISSING);
    await expect401(await t.call("GET", "/plants", withAuthorization(`Bearer${token}`)), MISSING);
  });

  test("an empty token ('Bearer ' or 'Bearer') gets 401 as if no token were given", async () => {
    await expect401(await t.call("GET", "/plants", withAuthorization("Bearer ")), MISSING);
    await expect401(await t.call("GET", "/plants", withAuthorization("Bearer")), MISSING);
  });

  test('an unknown token gets 401 with error="invalid_token"', async () => {
    await expect401(await t.call("GET", "/plants", { token: "pst_not-a-real-token" }), INVALID);
  });

  test('a revoked token fails from its very next request with error="invalid_token"', async () => {
    const issued = await t.tokens.issue("bob");
    expect((await t.call("GET", "/plants", { token: issued.token })).status).toBe(200);
    expect(await t.tokens.revoke(issued.id)).toBe("revoked");
    await expect401(await t.call("GET", "/plants", { token: issued.token }), INVALID);
    // Other tokens are not affected.
    expect((await t.call("GET", "/plants", { token })).status).toBe(200);
  });

  test("the scheme name is case-insensitive (bearer, BEARER)", async () => {
    for (const scheme of ["bearer", "BEARER", "BeArEr"]) {
      const response = await t.call("GET", "/plants", withAuthorization(`${scheme} ${token}`));
      expect(response.status).toBe(200);
    }
  });

  test("a token in the access_token query parameter is not accepted", async () => {
    await expect401(await t.call("GET", `/plants?access_token=${encodeURIComponent(token)}`), MISSING);
  });

  test("a token in the request body is not accepted", async () => {
    const response = await t.call("POST", "/plants", { json: { id: 1, name: "Fern", access_token: token } });
    await expect401(response, MISSING);
  });

  test("every route under /plants requires authentication", async () => {
    await expect401(await t.call("GET", "/plants"), MISSING);
    await expect401(await t.call("POST", "/plants", { json: { id: 1, name: "Fern" } }), MISSING);
    await expect401(await t.call("DELETE", "/plants/1"), MISSING);

    await expect401(await t.call("GET", "/plants", { token: "pst_unknown" }), INVALID);
    await expect401(await t.call("POST", "/plants", { token: "pst_unknown", json: { id: 1, name: "Fern" } }), INVALID);
    await expect401(await t.call("DELETE", "/plants/1", { token: "pst_unknown" }), INVALID);
  });

  test("an unauthenticated request does not create or delete anything", async () => {
    expect((await t.call("POST", "/plants", { token, json: { id: 1, name: "Fern" } })).status).toBe(200);
    expect((await t.call("POST", "/plants", { json: { id: 2, name: "Ivy" } })).status).toBe(401);
    expect((await t.call("DELETE", "/plants/1", { token: "pst_unknown" })).status).toBe(401);
    expect(await (await t.call("GET", "/plants", { token })).json()).toEqual([{ name: "Fern" }]);
  });

  test("an unauthenticated request with an invalid body gets 401, not 400", async () => {
    await expect401(await t.call("POST", "/plants", { json: { id: "x", name: null } }), MISSING);
    await expect401(await t.call("POST", "/plants", { json: "{not json" }), MISSING);
    await expect401(await t.call("POST", "/plants", { token: "pst_unknown", json: "{not json" }), INVALID);
    await expect401(
      await t.call("POST", "/plants", { body: "hello", headers: { "content-type": "text/plain" } }),
      MISSING,
    );
  });

  test("an unauthenticated request with an invalid limit or id gets 401, not 400", async () => {
    await expect401(await t.call("GET", "/plants?limit=abc"), MISSING);
    await expect401(await t.call("DELETE", "/plants/abc"), MISSING);
  });

  test("a token never appears in a response body or header", async () => {
    const unknown = "pst_ThisIsASecretThatMustNotLeak0123456789abcdef";
    const responses = [
      await t.call("GET", "/plants", { token }),
      await t.call("GET", "/plants", { token: unknown }),
      await t.call("GET", `/plants?access_token=${unknown}`),
      await t.call("POST", "/plants", { token: unknown, json: { id: 1, name: "Fern" } }),
      await t.call("POST", "/plants", { token, json: { id: 1, name: "Fern" } }),
      await t.call("POST", "/plants", { token, json: { id: 1, name: "Fern" } }),
      await t.call("POST", "/plants", { token, json: { id: "bad", name: "Fern" } }),
      await t.call("DELETE", "/plants/1", { token: unknown }),
      await t.call("DELETE", "/plants/999", { token }),
      await t.call("GET", "/plants", withAuthorization(`Basic ${unknown}`)),
      await t.call("GET", "/plants", withAuthorization(`Bearer${unknown}`)),
    ];
    for (const response of responses) {
      const text = await response.text();
      const headers = JSON.stringify([...response.headers.entries()]);
      for (const secret of [token, unknown, token.slice(4), unknown.slice(4)]) {
        expect(text).not.toContain(secret);
        expect(headers).not.toContain(secret);
      }
    }
  });

  test("a token never appears in a log line", async () => {
    const unknown = "pst_ThisIsASecretThatMustNotLeak0123456789abcdef";
    await t.call("GET", "/plants", { token: unknown });
    await t.call("GET", "/plants", { token });
    await t.call("POST", "/plants", { token, json: "{broken" });
    const logged = JSON.stringify(t.logged.map((entry) => [entry.message, String(entry.detail)]));
    expect(logged).not.toContain(token.slice(4));
    expect(logged).not.toContain(unknown.slice(4));
  });
});

// The bearer hook is picked by engine (docs/decisions/0005-async-reads.md): on SQLite it cannot wait.
test("a token store that answers with a promise where the engine answers at once is a logged 500, never a list", async () => {
  const t = await makeTestApp({
    wrapStores: (stores) => {
      const { authenticate } = stores.tokens;
      stores.tokens.authenticate = async (token) => authenticate.call(stores.tokens, token);
      return stores;
    },
  });
  const token = await t.tokenFor("alice");
  const owner = await t.stores.tokens.authenticate(token);
  await t.stores.plants.createPlant(owner?.id as number, { id: 1, name: "Fern" });
  const response = await t.call("GET", "/plants", { token });
  if (onSqlite) {
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ error: 500, message: expect.any(String) });
    expect(t.logged.map((entry) => entry.message)).toContain("unhandled error");
  } else {
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual([{ name: "Fern" }]);
  }
});
