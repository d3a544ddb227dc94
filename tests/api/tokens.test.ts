import { beforeEach, describe, expect, test } from "bun:test";
import { ALL_SCOPES, SCOPES } from "../../src/core/tokens";
import { expectError, makeTestApp, type TestApp } from "../support/helpers";
import { within } from "../support/until";
import { TOKEN_PATTERN } from "../support/users";

const DAY = 86_400_000;
const START = Date.UTC(2026, 10, 1, 12);
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe("tokens over the API", () => {
  let t: TestApp;
  let now: number;
  let admin: string;

  beforeEach(async () => {
    now = START;
    t = await makeTestApp({ now: () => now });
    admin = await t.tokenFor("alice");
  });

  const mint = (token: string, json: unknown) => t.call("POST", "/tokens", { token, json });
  async function minted(token: string, json: unknown) {
    const response = await mint(token, json);
    expect(response.status).toBe(201);
    return (await response.json()) as { id: number; token: string; expiresAt: string | null; scopes: string[] };
  }

  test("POST /tokens answers 201 with the new token, its secret shown once; it works at once", async () => {
    const response = await mint(admin, { name: "dashboard", scopes: ["plants:read"], expiresInDays: 30 });
    expect(response.status).toBe(201);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toEqual({
      id: expect.any(Number),
      name: "dashboard",
      scopes: ["plants:read"],
      createdAt: new Date(START).toISOString(),
      expiresAt: new Date(START + 30 * DAY).toISOString(),
      token: expect.stringMatching(TOKEN_PATTERN),
    });
    expect((await t.call("GET", "/plants", { token: body.token as string })).status).toBe(200);
    // Never again: the list holds no secret.
    const listed = await (await t.call("GET", "/tokens", { token: admin })).text();
    expect(listed).not.toContain(body.token as string);
  });

  test("GET /tokens lists the caller's user's tokens, oldest first, with exactly the SPEC's fields", async () => {
    const child = await minted(admin, { name: "script", scopes: ["plants:write", "plants:read"] });
    await t.tokenFor("bob");
    now += 1_000;
    const list = (await (await t.call("GET", "/tokens", { token: admin })).json()) as Array<Record<string, unknown>>;
    expect(list).toEqual([
      {
        id: expect.any(Number),
        name: "cli",
        scopes: [...SCOPES],
        createdAt: new Date(START).toISOString(),
        expiresAt: null,
        // Recorded beside the request, so the first lookup's or a later one's (to the minute).
        lastUsedAt: expect.stringMatching(ISO),
        revokedAt: null,
        current: true,
      },
      {
        id: child.id,
        name: "script",
        scopes: ["plants:read", "plants:write"],
        createdAt: new Date(START).toISOString(),
        expiresAt: null,
        lastUsedAt: null,
        revokedAt: null,
        current: false,
      },
    ]);
  });

  test("a request outside its token's scopes is a 403 naming the scope, with RFC 6750's challenge, on every route", async () => {
    const readOnly = (await minted(admin, { name: "ro", scopes: ["plants:read"] })).token;
    const writeOnly = (await minted(admin, { name: "wo", scopes: ["plants:write"] })).token;
    const cases: Array<[string, string, string, unknown?]> = [
      [writeOnly, "GET", "/plants"],
      [writeOnly, "GET", "/plants/1"],
      [writeOnly, "GET", "/plants/changes"],
      [readOnly, "POST", "/plants", { id: 1, name: "a" }],
      [readOnly, "PUT", "/plants/1", { name: "a" }],
      [readOnly, "PATCH", "/plants/1", { name: "a" }],
      [readOnly, "DELETE", "/plants/1"],
      [readOnly, "GET", "/webhooks"],
      [readOnly, "POST", "/webhooks", { url: "https://example.com/" }],
      [readOnly, "DELETE", "/webhooks/1"],
      [readOnly, "GET", "/webhooks/1/deliveries"],
      [readOnly, "GET", "/tokens"],
      [readOnly, "POST", "/tokens", { name: "x", scopes: ["plants:read"] }],
      [readOnly, "DELETE", "/tokens/1"],
    ];
    const needed = [
      "plants:read",
      "plants:read",
      "plants:read",
      "plants:write",
      "plants:write",
      "plants:write",
      "plants:write",
    ];
    for (const [i, [token, method, path, json]] of cases.entries()) {
      const scope = needed[i] ?? (path.startsWith("/webhooks") ? "webhooks" : "tokens");
      const response = await t.call(method, path, { token, json });
      expect(response.headers.get("www-authenticate")).toBe(`Bearer error="insufficient_scope", scope="${scope}"`);
      expect(await expectError(response, 403)).toContain(scope);
    }
    // Nothing was written by the refused requests.
    expect(await (await t.call("GET", "/plants", { token: admin })).json()).toEqual([]);
  });

  test("the scope is checked before the body is read: a refused token's malformed body is a 403, not a 400", async () => {
    const readOnly = (await minted(admin, { name: "ro", scopes: ["plants:read"] })).token;
    const response = await t.call("POST", "/plants", { token: readOnly, json: "{not json" });
    await expectError(response, 403);
  });

  test("a token mints only a subset of its own scopes (403 otherwise), and not one that outlives it", async () => {
    const limited = (await minted(admin, { name: "p", scopes: ["plants:read", "tokens"], expiresInDays: 10 })).token;
    expect(await expectError(await mint(limited, { name: "x", scopes: ["plants:write"] }), 403)).toContain(
      "plants:write",
    );
    expect(await expectError(await mint(limited, { name: "x", scopes: ["tokens"], expiresInDays: 11 }), 403)).toContain(
      "expiresInDays",
    );
    const shorter = await minted(limited, { name: "x", scopes: ["plants:read"], expiresInDays: 10 });
    expect(shorter.expiresAt).toBe(new Date(START + 10 * DAY).toISOString());
    // Without expiresInDays, a child has exactly its parent's expiry; of a parent that never expires, none.
    const inherited = await minted(limited, { name: "y", scopes: ["tokens"] });
    expect(inherited.expiresAt).toBe(new Date(START + 10 * DAY).toISOString());
    expect((await minted(admin, { name: "z", scopes: ["tokens"] })).expiresAt).toBeNull();
  });

  test("bad bodies are a 400 naming the field, judged before the subset and lifetime rules", async () => {
    const readOnlyMinter = (await minted(admin, { name: "m", scopes: ["tokens"], expiresInDays: 1 })).token;
    const cases: Array<[unknown, string]> = [
      [{ scopes: ["tokens"] }, "name"],
      [{ name: "", scopes: ["tokens"] }, "name"],
      [{ name: "x".repeat(101), scopes: ["tokens"] }, "name"],
      [{ name: 5, scopes: ["tokens"] }, "name"],
      [{ name: "x" }, "scopes"],
      [{ name: "x", scopes: [] }, "scopes"],
      [{ name: "x", scopes: ["tokens", "tokens"] }, "scopes"],
      [{ name: "x", scopes: ["admin"] }, "scopes"],
      [{ name: "x", scopes: "tokens" }, "scopes"],
      [{ name: "x", scopes: ["plants:write"], expiresInDays: 0 }, "expiresInDays"],
      [{ name: "x", scopes: ["plants:write"], expiresInDays: 3651 }, "expiresInDays"],
      [{ name: "x", scopes: ["plants:write"], expiresInDays: 1.5 }, "expiresInDays"],
      [{ name: "x", scopes: ["plants:write"], expiresInDays: "3" }, "expiresInDays"],
    ];
    for (const [json, field] of cases) {
      expect(await expectError(await mint(readOnlyMinter, json), 400)).toStartWith(field);
    }
    expect(await (await t.call("GET", "/tokens", { token: admin })).json()).toHaveLength(2);
  });

  test("a user holds at most 100 unrevoked tokens (409 past it, CLI-made ones counted); revoking makes room", async () => {
    for (let i = 0; i < 98; i++) await t.tokens.issue("alice");
    await minted(admin, { name: "last", scopes: ["tokens"] });
    const refused = await mint(admin, { name: "one more", scopes: ["tokens"] });
    expect(await expectError(refused, 409)).toContain("100");
    const list = (await (await t.call("GET", "/tokens", { token: admin })).json()) as Array<{ id: number }>;
    expect(list).toHaveLength(100);
    expect((await t.call("DELETE", `/tokens/${list[1]?.id}`, { token: admin })).status).toBe(204);
    await minted(admin, { name: "one more", scopes: ["tokens"] });
    // Another user's count is their own.
    const bob = await t.tokenFor("bob");
    await minted(bob, { name: "bob's", scopes: ["tokens"] });
  });

  test("mints racing at the limit never pass 100 unrevoked tokens", async () => {
    for (let i = 0; i < 94; i++) await t.tokens.issue("alice");
    const racing = await Promise.all(
      Array.from({ length: 12 }, (_, i) => mint(admin, { name: `racer ${i}`, scopes: ["tokens"] })),
    );
    expect(racing.map((response) => response.status).sort()).toEqual([...Array(5).fill(201), ...Array(7).fill(409)]);
    const list = (await (await t.call("GET", "/tokens", { token: admin })).json()) as unknown[];
    expect(list).toHaveLength(100);
  });

  test("DELETE /tokens/{id} revokes one of the user's tokens from the next request; 404 for another's or an unknown id", async () => {
    const child = await minted(admin, { name: "c", scopes: ["plants:read"] });
    const bob = await t.tokenFor("bob");
    await expectError(await t.call("DELETE", `/tokens/${child.id}`, { token: bob }), 404);
    await expectError(await t.call("DELETE", "/tokens/999999", { token: admin }), 404);
    await expectError(await t.call("DELETE", "/tokens/abc", { token: admin }), 400);
    await expectError(await t.call("DELETE", "/tokens/0", { token: admin }), 400);
    expect((await t.call("GET", "/plants", { token: child.token })).status).toBe(200);
    expect((await t.call("DELETE", `/tokens/${child.id}`, { token: admin })).status).toBe(204);
    expect((await t.call("DELETE", `/tokens/${child.id}`, { token: admin })).status).toBe(204);
    await expectError(await t.call("GET", "/plants", { token: child.token }), 401);
    const list = (await (await t.call("GET", "/tokens", { token: admin })).json()) as Array<Record<string, unknown>>;
    expect(list.find((token) => token.id === child.id)?.revokedAt).toMatch(ISO);
    // The calling token itself.
    const self = (await minted(admin, { name: "self", scopes: ["tokens"] })).token;
    const selfId = ((await (await t.call("GET", "/tokens", { token: self })).json()) as Array<Record<string, unknown>>)
      .filter((token) => token.current)
      .map((token) => token.id);
    expect((await t.call("DELETE", `/tokens/${selfId[0]}`, { token: self })).status).toBe(204);
    await expectError(await t.call("GET", "/tokens", { token: self }), 401);
  });

  test("an expired token is a 401 saying it expired; its children expire with it", async () => {
    const parent = (await minted(admin, { name: "p", scopes: ["plants:read", "tokens"], expiresInDays: 1 })).token;
    const child = (await minted(parent, { name: "c", scopes: ["plants:read"] })).token;
    now += DAY - 1;
    expect((await t.call("GET", "/plants", { token: child })).status).toBe(200);
    now += 1;
    for (const token of [parent, child]) {
      const response = await t.call("GET", "/plants", { token });
      expect(response.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
      expect(await expectError(response, 401)).toContain("expired");
    }
    expect((await t.call("GET", "/plants", { token: admin })).status).toBe(200);
  });

  test("a change stream of a token that expires ends within 5 s; another token's stays open", async () => {
    const expiring = (await minted(admin, { name: "e", scopes: ["plants:read"], expiresInDays: 1 })).token;
    const open = (token: string) =>
      t.app.handle(
        new Request("http://localhost/plants/changes", {
          headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" },
        }),
      );
    const [doomed, other] = await Promise.all([open(expiring), open(admin)]);
    expect([doomed.status, other.status]).toEqual([200, 200]);
    const ended = (response: Response) => {
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      return (async () => {
        while (!(await reader.read()).done) {}
        return performance.now();
      })();
    };
    let otherEnded = false;
    void ended(other).then(() => {
      otherEnded = true;
    });
    now += DAY;
    const expiredAt = performance.now();
    const endedAt = await within(ended(doomed), 10_000, "the expired token's stream to end");
    expect(endedAt - expiredAt).toBeLessThan(5_000);
    expect(otherEnded).toBe(false);
    await (other.body as ReadableStream).cancel().catch(() => {});
  });

  test("tokens from the CLI and the first start have every scope and no expiry", async () => {
    const [listed] = await t.tokens.list();
    expect(listed).toMatchObject({ scopes: ALL_SCOPES, expiresAt: null, name: "cli" });
    const first = await t.tokens.bootstrap();
    expect(first).toBeUndefined();
  });
});

describe("every route names its scope", () => {
  test("each route behind the bearer check declares one, kept as its OpenAPI security requirement", async () => {
    const t = await makeTestApp();
    const PUBLIC = /^\/(healthz|readyz|openapi\.json|swagger|favicon\.ico)/;
    const routes = t.app.routes.filter((route) => !PUBLIC.test(route.path) && !route.path.includes("*"));
    expect(routes.length).toBeGreaterThan(10);
    for (const route of routes) {
      const security = (route.hooks as { detail?: { security?: Array<{ bearerAuth?: string[] }> } }).detail?.security;
      const scope = security?.[0]?.bearerAuth?.[0] ?? "none";
      expect({
        route: `${route.method} ${route.path}`,
        scope,
        known: (SCOPES as readonly string[]).includes(scope),
      }).toEqual({ route: `${route.method} ${route.path}`, scope, known: true });
      expect(security).toHaveLength(1);
    }
    // A public route's answer needs no token; every other one refuses a request without one.
    for (const route of routes) {
      const path = route.path.replace(":id", "1").replace(":file", "x");
      expect((await t.call(route.method, path)).status).toBe(401);
    }
  });
});
