import { describe, expect, test } from "bun:test";
import { parseTrustedProxy } from "../../src/core/client-address";
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

/**
 * A request from the peer `peer` (the socket's other end, as the server hands it over), with
 * `forwardedFor` as its X-Forwarded-For headers, one each.
 */
function from(t: TestApp, peer: string, token?: string, ...forwardedFor: string[]) {
  const headers = new Headers(token === undefined ? {} : { authorization: `Bearer ${token}` });
  for (const value of forwardedFor) headers.append("x-forwarded-for", value);
  const request = new Request(`${BASE}/plants`, { headers });
  t.ops.notes.set(request, { id: "test", userId: undefined, peer: () => peer });
  return t.app.handle(request);
}

/** Spends a whole budget of failures (`budget` 401s) through `send`, and checks that the next is refused. */
async function spend(budget: number, send: () => Promise<Response>) {
  for (let i = 0; i < budget; i++) expect((await send()).status).toBe(401);
  expect((await send()).status).toBe(429);
}

describe("failed authentications per client address", () => {
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

describe("failed authentications behind a reverse proxy (TRUST_PROXY)", () => {
  const PROXY = "127.0.0.1";
  const trustProxy = [parseTrustedProxy(PROXY), parseTrustedProxy("10.0.0.0/8")].filter((range) => range !== undefined);

  test("one client spending its budget through the proxy locks out neither another client nor its own valid token", async () => {
    const t = await makeTestApp({ authFailuresPerMinute: 3, trustProxy, now: () => 0 });
    const [alice, bob] = [await t.tokenFor("alice"), await t.tokenFor("bob")];
    await spend(3, () => from(t, PROXY, "pst_guess", "203.0.113.66"));
    // The guesser's valid token is served; another client's failures still get 401, its token 200.
    expect((await from(t, PROXY, alice, "203.0.113.66")).status).toBe(200);
    expect((await from(t, PROXY, "pst_typo", "198.51.100.20")).status).toBe(401);
    expect((await from(t, PROXY, bob, "198.51.100.20")).status).toBe(200);
    // A client cannot pass for another by sending its own X-Forwarded-For: the proxy appends the real one.
    expect((await from(t, PROXY, "pst_guess", "198.51.100.20, 203.0.113.66")).status).toBe(429);
    // Through a second trusted hop the client is the same one.
    expect((await from(t, PROXY, "pst_guess", "203.0.113.66, 10.1.1.1")).status).toBe(429);
    // A dual-stack socket gives the proxy's IPv4 address as IPv4-mapped IPv6: still the proxy.
    expect((await from(t, "::ffff:127.0.0.1", "pst_guess", "203.0.113.66")).status).toBe(429);
  });

  test("every X-Forwarded-For header counts, joined in order: the right-most client is the one counted", async () => {
    const t = await makeTestApp({ authFailuresPerMinute: 2, trustProxy, now: () => 0 });
    await spend(2, () => from(t, PROXY, "pst_guess", "198.51.100.1", "203.0.113.5"));
    expect((await from(t, PROXY, "pst_guess", "203.0.113.5")).status).toBe(429);
    expect((await from(t, PROXY, "pst_guess", "198.51.100.1")).status).toBe(401);
  });

  test("from a peer that is not a trusted proxy, X-Forwarded-For is ignored: rotating it escapes nothing", async () => {
    const t = await makeTestApp({ authFailuresPerMinute: 3, trustProxy, now: () => 0 });
    let n = 0;
    await spend(3, () => from(t, "192.0.2.44", "pst_guess", `198.51.100.${++n}`));
    expect((await from(t, "192.0.2.44", "pst_guess", "203.0.113.200")).status).toBe(429);
  });

  test("with TRUST_PROXY empty (the default) the peer is the client, even on loopback", async () => {
    const t = await makeTestApp({ authFailuresPerMinute: 2, now: () => 0 });
    await spend(2, () => from(t, PROXY, "pst_guess", "203.0.113.66"));
    expect((await from(t, PROXY, "pst_guess", "198.51.100.20")).status).toBe(429);
  });

  test("a malformed forwarded entry ends the walk: the hop that passed it on is counted", async () => {
    const t = await makeTestApp({ authFailuresPerMinute: 2, trustProxy, now: () => 0 });
    await spend(2, () => from(t, PROXY, "pst_guess", "203.0.113.66, not-an-address, 10.0.0.9"));
    expect((await from(t, PROXY, "pst_guess", "10.0.0.9")).status).toBe(429);
    expect((await from(t, PROXY, "pst_guess", "203.0.113.66")).status).toBe(401);
  });
});
