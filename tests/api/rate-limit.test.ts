import { describe, expect, test } from "bun:test";
import { BASE, expectError, makeTestApp, type TestApp } from "../support/helpers";

describe("per-token rate limiting", () => {
  test("past the limit a token gets 429 with Retry-After and the Error body; it refills over time", async () => {
    let now = 1_000_000;
    const t = await makeTestApp({ rateLimitPerMinute: 3, now: () => now });
    const token = await t.tokenFor("alice");
    for (let i = 0; i < 3; i++) expect((await t.call("GET", "/plants", { token })).status).toBe(200);

    const limited = await t.call("POST", "/plants", { token, json: { id: 1, name: "Fern" } });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("20");
    expect(await limited.json()).toEqual({
      error: 429,
      message: "Too many requests with this token; retry in 20 s.",
    });
    expect(await (await t.call("GET", "/plants", { token })).text()).toContain("429");

    now += 20_000;
    expect((await t.call("POST", "/plants", { token, json: { id: 1, name: "Fern" } })).status).toBe(200);
    expect((await t.call("GET", "/plants", { token })).status).toBe(429);
  });

  test("tokens are limited separately, and an invalid token is a 401, not a 429", async () => {
    const t = await makeTestApp({ rateLimitPerMinute: 1, now: () => 0 });
    const [alice, bob] = [await t.tokenFor("alice"), await t.tokenFor("bob")];
    expect((await t.call("GET", "/plants", { token: alice })).status).toBe(200);
    expect((await t.call("GET", "/plants", { token: alice })).status).toBe(429);
    expect((await t.call("GET", "/plants", { token: bob })).status).toBe(200);
    expect((await t.call("GET", "/plants", { token: "pst_wrong" })).status).toBe(401);
    expect((await t.call("GET", "/plants")).status).toBe(401);
  });

  test("0 turns it off", async () => {
    const t = await makeTestApp({ rateLimitPerMinute: 0, now: () => 0 });
    const token = await t.tokenFor("alice");
    for (let i = 0; i < 200; i++) expect((await t.call("GET", "/plants?limit=1", { token })).status).toBe(200);
  });
});

describe("failed authentications per client address", () => {
  /** A request from `client`, as the server would hand it over with the peer's address. */
  function from(t: TestApp, client: string, token?: string) {
    const request = new Request(`${BASE}/plants`, {
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    });
    t.ops.notes.set(request, { id: "test", userId: undefined, client: () => client });
    return t.app.handle(request);
  }

  test("past the budget an address's failures get 429 with Retry-After; its valid tokens are still served", async () => {
    let now = 5_000_000;
    const t = await makeTestApp({ authFailuresPerMinute: 3, now: () => now });
    const valid = await t.tokenFor("alice");
    // A valid token does not spend the budget.
    for (let i = 0; i < 5; i++) expect((await from(t, "192.0.2.1", valid)).status).toBe(200);
    expect((await from(t, "192.0.2.1")).status).toBe(401);
    expect((await from(t, "192.0.2.1", "pst_wrong")).status).toBe(401);
    expect((await from(t, "192.0.2.1", "pst_wrong-again")).status).toBe(401);

    for (const token of ["pst_wrong", undefined, "pst_another-guess"]) {
      const limited = await from(t, "192.0.2.1", token);
      expect(limited.headers.get("retry-after")).toBe("20");
      expect(await expectError(limited, 429)).toBe("Too many failed authentications from your address; retry in 20 s.");
    }
    // Only failures are refused: a valid token from the spent address is served, and spends nothing.
    for (let i = 0; i < 5; i++) expect((await from(t, "192.0.2.1", valid)).status).toBe(200);
    expect((await from(t, "192.0.2.1", "pst_wrong")).status).toBe(429);
    // Other addresses are not affected.
    expect((await from(t, "198.51.100.7", valid)).status).toBe(200);
    expect((await from(t, "198.51.100.7", "pst_wrong")).status).toBe(401);

    now += 20_000;
    expect((await from(t, "192.0.2.1", "pst_wrong")).status).toBe(401);
    expect((await from(t, "192.0.2.1", "pst_wrong")).status).toBe(429);
  });

  test("a revoked token counts as a failure; the valid token of another user from that address is served", async () => {
    const t = await makeTestApp({ authFailuresPerMinute: 2, now: () => 0 });
    const revoked = await t.tokens.issue("mallory");
    const bob = await t.tokenFor("bob");
    expect(await t.tokens.revoke(revoked.id)).toBe("revoked");
    expect((await from(t, "192.0.2.9", revoked.token)).status).toBe(401);
    expect((await from(t, "192.0.2.9", revoked.token)).status).toBe(401);
    expect((await from(t, "192.0.2.9", revoked.token)).status).toBe(429);
    const served = await from(t, "192.0.2.9", bob);
    expect(served.status).toBe(200);
    expect(await served.json()).toEqual([]);
  });

  test("0 turns it off", async () => {
    const t = await makeTestApp({ authFailuresPerMinute: 0, now: () => 0 });
    for (let i = 0; i < 300; i++) expect((await from(t, "192.0.2.1", "pst_wrong")).status).toBe(401);
  });
});
