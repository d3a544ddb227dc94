/**
 * RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers) on every answer to an
 * authenticated request. On PostgreSQL `r` is this instance's estimate of the shared bucket; with
 * one instance and the clock held it is exact, so the same figures hold on both engines.
 */
import { describe, expect, test } from "bun:test";
import { makeTestApp } from "../support/helpers";

/** The two headers of an answer (null when absent), and Retry-After. */
const budget = (response: Response) => ({
  policy: response.headers.get("ratelimit-policy"),
  limit: response.headers.get("ratelimit"),
  retryAfter: response.headers.get("retry-after"),
});
const POLICY_3 = '"per-token";q=3;w=60';
const left = (r: number, t: number) => `"per-token";r=${r};t=${t}`;

describe("RateLimit headers", () => {
  test("count down per request; the 429 has r=0, t>0 and Retry-After equal to t", async () => {
    const t = await makeTestApp({ rateLimitPerMinute: 3, now: () => 1_000_000 });
    const token = await t.tokenFor("alice");
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push(budget(await t.call("GET", "/plants", { token })));
    expect(seen).toEqual([
      { policy: POLICY_3, limit: left(2, 0), retryAfter: null },
      { policy: POLICY_3, limit: left(1, 0), retryAfter: null },
      // At 3 a minute a token refills every 20 s.
      { policy: POLICY_3, limit: left(0, 20), retryAfter: null },
      { policy: POLICY_3, limit: left(0, 20), retryAfter: "20" },
    ]);
  });

  test("the refill moves r and t with the clock", async () => {
    let now = 2_000_000;
    const t = await makeTestApp({ rateLimitPerMinute: 3, now: () => now });
    const token = await t.tokenFor("alice");
    for (let i = 0; i < 3; i++) await t.call("GET", "/plants", { token });
    const limited = await t.call("GET", "/plants", { token });
    expect([limited.status, budget(limited)]).toEqual([
      429,
      { policy: POLICY_3, limit: left(0, 20), retryAfter: "20" },
    ]);
    now += 10_000;
    const half = await t.call("GET", "/plants", { token });
    expect([half.status, budget(half)]).toEqual([429, { policy: POLICY_3, limit: left(0, 10), retryAfter: "10" }]);
    now += 10_000;
    const served = await t.call("GET", "/plants", { token });
    expect([served.status, budget(served).limit]).toEqual([200, left(0, 20)]);
    now += 40_000;
    const refilled = await t.call("GET", "/plants", { token });
    expect([refilled.status, budget(refilled).limit]).toEqual([200, left(1, 0)]);
  });

  test("answers after authentication carry them whatever their status: 200, 201, 204, 304, 400, 404, 409, 412", async () => {
    const t = await makeTestApp({ rateLimitPerMinute: 100, webhookAllowPrivate: true, now: () => 3_000_000 });
    const token = await t.tokenFor("alice");
    const answers: Array<[number, Response]> = [];
    const send = async (status: number, method: string, path: string, init = {}) =>
      answers.push([status, await t.call(method, path, { token, ...init })]);
    await send(200, "POST", "/plants", { json: { id: 1, name: "Fern" } });
    await send(409, "POST", "/plants", { json: { id: 1, name: "Fern" } });
    const [, created] = answers[0] as [number, Response];
    const etag = created.headers.get("etag") as string;
    await send(304, "GET", "/plants/1", { headers: { "if-none-match": etag } });
    await send(412, "DELETE", "/plants/1", { headers: { "if-match": '"stale"' } });
    await send(400, "GET", "/plants?limit=abc");
    await send(400, "POST", "/plants", { json: { id: "x" } });
    await send(404, "GET", "/plants/999");
    await send(201, "POST", "/webhooks", { json: { url: "http://127.0.0.1:9/hook" } });
    await send(204, "DELETE", "/plants/1");
    expect(answers.map(([, response]) => [response.status, budget(response)])).toEqual(
      answers.map(([status], i) => [
        status,
        { policy: '"per-token";q=100;w=60', limit: left(99 - i, 0), retryAfter: null },
      ]),
    );
  });

  test("not on failed authentications (401, or the per-address 429): they describe a token's budget", async () => {
    const t = await makeTestApp({ rateLimitPerMinute: 3, authFailuresPerMinute: 1, now: () => 4_000_000 });
    const missing = await t.call("GET", "/plants");
    const wrong = await t.call("GET", "/plants", { token: "pst_wrong" });
    expect([missing.status, wrong.status]).toEqual([401, 429]);
    for (const response of [missing, wrong]) {
      expect([budget(response).policy, budget(response).limit]).toEqual([null, null]);
    }
    // Failures spent nothing of the token's budget.
    const valid = await t.call("GET", "/plants", { token: await t.tokenFor("alice") });
    expect(budget(valid).limit).toBe(left(2, 0));
  });

  test("RATE_LIMIT_PER_MINUTE=0 sends neither", async () => {
    const t = await makeTestApp({ rateLimitPerMinute: 0, now: () => 0 });
    const token = await t.tokenFor("alice");
    for (const response of [await t.call("GET", "/plants", { token }), await t.call("GET", "/plants/9", { token })]) {
      expect([budget(response).policy, budget(response).limit]).toEqual([null, null]);
    }
  });

  test("CORS exposes RateLimit, RateLimit-Policy and Retry-After to an allowed origin", async () => {
    const origin = "https://app.example";
    const t = await makeTestApp({ rateLimitPerMinute: 3, corsOrigins: [origin], now: () => 0 });
    const token = await t.tokenFor("alice");
    const response = await t.call("GET", "/plants", { token, headers: { origin } });
    const exposed = response.headers.get("access-control-expose-headers")?.split(/,\s*/);
    expect(exposed).toEqual(expect.arrayContaining(["ratelimit", "ratelimit-policy", "retry-after"]));
  });
});
