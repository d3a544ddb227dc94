import { describe, expect, test } from "bun:test";
import { makeTestApp } from "../support/helpers";

describe("safe defaults on the wire", () => {
  test("every response says nosniff and carries no banner", async () => {
    const t = await makeTestApp();
    const token = await t.tokenFor("alice");
    const responses = await Promise.all([
      t.call("GET", "/plants", { token }),
      t.call("POST", "/plants", { token, json: { id: 1, name: "Fern" } }),
      t.call("DELETE", "/plants/1", { token }),
      t.call("GET", "/plants"),
      t.call("GET", "/plants?limit=x", { token }),
      t.call("PUT", "/plants", { token }),
      t.call("GET", "/nowhere"),
      t.call("GET", "/swagger"),
      t.call("GET", "/swagger/json"),
      t.call("GET", "/swagger/assets/swagger-ui.css"),
    ]);
    for (const response of responses) {
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("x-powered-by")).toBeNull();
      expect(response.headers.get("server")).toBeNull();
    }
  });

  test("every JSON answer, success or error, has the one content type application/json;charset=utf-8", async () => {
    const t = await makeTestApp();
    const token = await t.tokenFor("alice");
    const answers = [
      await t.call("POST", "/plants", { token, json: { id: 1, name: "Fern" } }),
      await t.call("GET", "/plants", { token }),
      await t.call("GET", "/plants?limit=1", { token }),
      await t.call("GET", "/plants/1", { token }),
      await t.call("GET", "/plants/1?fields=id", { token }),
      await t.call("PATCH", "/plants/1", { token, json: { tag: "green" } }),
      await t.call("GET", "/webhooks", { token }),
      await t.call("GET", "/openapi.json"),
      await t.call("POST", "/plants", { token, json: { id: 1, name: "Fern" } }),
      await t.call("POST", "/plants", { token, json: { name: "Fern" } }),
      await t.call("GET", "/plants/2", { token }),
      await t.call("GET", "/plants"),
      await t.call("GET", "/nowhere"),
      await t.call("PUT", "/plants"),
      await t.call("GET", "/webhooks/1/deliveries", { token }),
    ];
    expect(answers.map((r) => r.status)).toEqual([
      200, 200, 200, 200, 200, 200, 200, 200, 409, 400, 404, 401, 404, 405, 404,
    ]);
    expect(answers.map((r) => r.headers.get("content-type"))).toEqual(
      answers.map(() => "application/json;charset=utf-8"),
    );
  });

  test("CORS is off by default: no CORS headers, and a preflight is not answered", async () => {
    const t = await makeTestApp();
    const token = await t.tokenFor("alice");
    const simple = await t.call("GET", "/plants", { token, headers: { origin: "https://evil.example" } });
    expect(simple.status).toBe(200);
    expect(simple.headers.get("access-control-allow-origin")).toBeNull();
    const preflight = await t.call("OPTIONS", "/plants", {
      headers: { origin: "https://evil.example", "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(405);
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
  });

  describe("with an allow-list", () => {
    const allowed = "https://app.example";
    const t = () => makeTestApp({ corsOrigins: [allowed, "http://localhost:5173"] });

    test("an allowed origin is echoed exactly on requests and preflights", async () => {
      const app = await t();
      const token = await app.tokenFor("alice");
      const simple = await app.call("GET", "/plants", { token, headers: { origin: allowed } });
      expect(simple.headers.get("access-control-allow-origin")).toBe(allowed);
      expect(simple.headers.get("vary")).toContain("Origin");

      const preflight = await app.call("OPTIONS", "/plants", {
        headers: {
          origin: allowed,
          "access-control-request-method": "POST",
          "access-control-request-headers": "authorization, content-type",
        },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get("access-control-allow-origin")).toBe(allowed);
      expect(preflight.headers.get("access-control-allow-methods")).toBe("GET, POST, PUT, PATCH, DELETE");
      expect(preflight.headers.get("access-control-allow-headers")?.toLowerCase()).toBe(
        "authorization, content-type, idempotency-key, if-match, if-none-match, last-event-id",
      );
      expect(preflight.headers.get("access-control-allow-credentials")).toBeNull();
    });

    test.each([
      "http://app.example",
      "https://app.example.evil.com",
      "https://sub.app.example",
      "https://app.example:8443",
      "app.example",
      "null",
      "http://localhost:5174",
    ])("the near miss %s gets no CORS grant", async (origin) => {
      const app = await t();
      const token = await app.tokenFor("alice");
      const simple = await app.call("GET", "/plants", { token, headers: { origin } });
      expect(simple.status).toBe(200);
      expect(simple.headers.get("access-control-allow-origin")).toBeNull();
      const preflight = await app.call("OPTIONS", "/plants", {
        headers: { origin, "access-control-request-method": "GET" },
      });
      expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    });

    test("unknown paths stay 404 and wrong methods 405", async () => {
      const app = await t();
      expect((await app.call("GET", "/nowhere")).status).toBe(404);
      const wrong = await app.call("PUT", "/plants");
      expect(wrong.status).toBe(405);
      expect(wrong.headers.get("allow")).toBe("GET, POST");
    });
  });
});
