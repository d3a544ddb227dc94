import { describe, expect, test } from "bun:test";
import type { SQL } from "bun";
import { parseTrustedProxy } from "../../src/core/client-address";
import { STATUS_SQL } from "../../src/db/postgres/queries";
import { createLogger, faultLog } from "../../src/ops/logger";
import { createMetricsApp } from "../../src/ops/metrics-app";
import { observed } from "../../src/ops/observe";
import { expectError, makeTestApp, onSqlite } from "../support/helpers";
import { parsePrometheusText, sample } from "../support/prometheus";
import { until } from "../support/until";

const BASE = "http://localhost";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The app as the server runs it: every request observed, log lines captured as parsed JSON,
 * and the metrics listener's handler as `scrape`. `level` is LOG_LEVEL.
 */
async function observedApp(options: Parameters<typeof makeTestApp>[0] = {}, level: "info" | "warn" = "info") {
  const lines: Array<Record<string, unknown>> = [];
  const { logger, access } = await createLogger({
    level,
    format: "json",
    destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
  });
  const t = await makeTestApp({ ...options, logWith: (ops) => faultLog(logger, ops.notes) });
  const fetch = observed((request) => t.app.handle(request), {
    access,
    notes: t.ops.notes,
    metrics: t.ops.metrics,
    routes: t.app.routes,
  });
  const send = (
    method: string,
    path: string,
    init: { token?: string; json?: unknown; headers?: Record<string, string>; peer?: string } = {},
  ) => {
    const headers: Record<string, string> = { ...init.headers };
    if (init.token) headers.authorization = `Bearer ${init.token}`;
    if (init.json !== undefined) headers["content-type"] = "application/json";
    const body = init.json === undefined ? undefined : JSON.stringify(init.json);
    return fetch(new Request(`${BASE}${path}`, { method, headers, body }), () => init.peer);
  };
  const metricsApp = createMetricsApp({ metrics: t.ops.metrics, token: undefined, log: () => {} });
  /** A scrape of the metrics listener, parsed. */
  const scrape = async () => {
    const response = metricsApp(new Request(`${BASE}/metrics`));
    expect(response.status).toBe(200);
    return parsePrometheusText(await response.text());
  };
  return { ...t, lines, send, metricsApp, scrape };
}

describe("health and readiness", () => {
  test("GET /healthz answers 200 without a token, and is not cached", async () => {
    const t = await makeTestApp();
    const response = await t.call("GET", "/healthz");
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(await response.json()).toEqual({ status: "ok" });
  });

  test("GET /readyz answers 200 once the service is ready and the database answers", async () => {
    const t = await makeTestApp();
    const response = await t.call("GET", "/readyz");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ready" });
  });

  test.each(["starting", "draining"] as const)("GET /readyz is 503 with the Error body while %s", async (state) => {
    const t = await makeTestApp();
    t.ops.lifecycle.state = state;
    const response = await t.call("GET", "/readyz");
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("1");
    expect(await response.json()).toEqual({ error: 503, message: `The service is ${state}.` });
    // Liveness is another question: the process is still alive.
    expect((await t.call("GET", "/healthz")).status).toBe(200);
  });

  test.if(onSqlite)("GET /readyz is 503 when the database does not answer, and the fault is logged", async () => {
    const t = await makeTestApp();
    // Closing with `true` finalizes the app's prepared statements too, as a lost file would fail them.
    t.sqlite.close(true);
    const response = await t.call("GET", "/readyz");
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ error: 503, message: "The database does not answer." });
    expect(t.logged.map((entry) => entry.message)).toEqual(["readiness check: the database does not answer"]);
  });
});

/**
 * A test app whose disk can fill and empty again. On SQLite (in memory) a full disk is
 * `max_page_count` pinned at the pages in use: a write that needs a new page fails with
 * SQLITE_FULL. On PostgreSQL every INSERT and the room probe fail as a full server fails them
 * (SQLSTATE 53100); `probes` counts the probes tried.
 */
async function appOnFillableDisk() {
  let full = false;
  let probes = 0;
  const diskFull = () =>
    Object.assign(new Error('could not extend file "base/1/2": No space left on device'), {
      code: "ERR_POSTGRES_SERVER_ERROR",
      errno: "53100",
    });
  const failingWhenFull = (client: SQL): SQL =>
    new Proxy(client, {
      get(target, key) {
        if (key === "unsafe")
          return (sql: string, params?: unknown[]) => {
            if (sql === STATUS_SQL.room) probes++;
            const writes = sql === STATUS_SQL.room || /\bINSERT\s+INTO\b/i.test(sql);
            return full && writes ? Promise.reject(diskFull()) : target.unsafe(sql, params);
          };
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  const t = await makeTestApp({ wrapPostgresClient: failingWhenFull });
  return {
    ...t,
    probes: () => probes,
    setFull(on: boolean) {
      full = on;
      if (!onSqlite) return;
      const { page_count } = t.sqlite.query("PRAGMA page_count").get() as { page_count: number };
      t.sqlite.run(`PRAGMA max_page_count = ${on ? page_count : 1_000_000}`);
    },
  };
}

describe("readiness on a full disk", () => {
  const NO_SPACE = "Writes are failing: the store is out of disk space.";

  /** Creates plants from `firstId` on until one is refused; expects that refusal to be the 507. */
  async function createUntilRefused(t: Awaited<ReturnType<typeof appOnFillableDisk>>, token: string, firstId: number) {
    for (let id = firstId; id < firstId + 1_000; id++) {
      const response = await t.call("POST", "/plants", { token, json: { id, name: `plant ${id} ${"x".repeat(240)}` } });
      if (response.status === 200) continue;
      expect(await expectError(response, 507)).toStartWith("The store is out of disk space.");
      return id;
    }
    throw new Error("1,000 creates on a full disk all succeeded");
  }

  test("/readyz is 503 from the first write refused for lack of space, stays so while the disk is full, and is 200 by itself once there is room", async () => {
    const t = await appOnFillableDisk();
    const alice = await t.tokenFor("alice");
    expect((await t.call("GET", "/readyz")).status).toBe(200);
    t.setFull(true);
    let next = await createUntilRefused(t, alice, 1);
    expect(await expectError(await t.call("GET", "/readyz"), 503)).toBe(NO_SPACE);
    // Asking again tries the probe (on PostgreSQL: once it has failed), which must not find room.
    if (!onSqlite) await until(() => t.probes(), { holds: (n) => n > 0, what: "a room probe" });
    for (let i = 0; i < 5; i++) {
      await Bun.sleep(10);
      expect(await expectError(await t.call("GET", "/readyz"), 503)).toBe(NO_SPACE);
    }
    // Room again, and no write: the probe finds it.
    t.setFull(false);
    await until(async () => (await t.call("GET", "/readyz")).status, { holds: (s) => s === 200, what: "/readyz 200" });
    // Full again: the first refusal turns readiness off at once, a write that succeeds turns it on.
    t.setFull(true);
    next = await createUntilRefused(t, alice, next + 1);
    expect((await t.call("GET", "/readyz")).status).toBe(503);
    t.setFull(false);
    expect((await t.call("POST", "/plants", { token: alice, json: { id: next + 1, name: "p" } })).status).toBe(200);
    expect((await t.call("GET", "/readyz")).status).toBe(200);
    expect(t.logged.map((entry) => entry.message)).toContain("writes are failing: full");
  });
});

describe("metrics", () => {
  test("the API does not serve /metrics: they have their own listener", async () => {
    const t = await makeTestApp();
    expect(await expectError(await t.call("GET", "/metrics"), 404)).toBe("No route matches this path.");
    expect((await t.call("GET", "/metrics", { token: await t.tokenFor("alice") })).status).toBe(404);
  });

  test.if(onSqlite)(
    "a scrape parses as Prometheus text: requests by route pattern and status, latency histograms, the database's size",
    async () => {
      const t = await observedApp();
      const alice = await t.tokenFor("alice");
      await t.tokenFor("bob");
      for (const id of [1, 2, 3])
        expect((await t.send("POST", "/plants", { token: alice, json: { id, name: "P" } })).status).toBe(200);
      expect((await t.send("POST", "/plants", { token: alice, json: { id: 1, name: "P" } })).status).toBe(409);
      expect((await t.send("DELETE", "/plants/2", { token: alice })).status).toBe(204);
      expect((await t.send("DELETE", "/plants/77", { token: alice })).status).toBe(404);
      expect((await t.send("GET", "/plants?limit=1", { token: alice })).status).toBe(200);
      // A path of its own is not counted under the pattern it also fits (/plants/:id).
      expect((await t.send("GET", "/plants/changes?limit=0", { token: alice })).status).toBe(200);
      expect((await t.send("GET", "/no/such/path")).status).toBe(404);

      const response = t.metricsApp(new Request(`${BASE}/metrics`));
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
      expect(response.headers.get("cache-control")).toBe("no-store");
      const samples = await parsePrometheusText(await response.text());

      const count = (method: string, route: string, status: string) =>
        sample(samples, "http_requests_total", { method, route, status })?.value;
      expect(samples.find((s) => s.name === "http_requests_total")?.type).toBe("counter");
      expect(count("POST", "/plants", "200")).toBe(3);
      expect(count("POST", "/plants", "409")).toBe(1);
      expect(count("DELETE", "/plants/:id", "204")).toBe(1);
      expect(count("DELETE", "/plants/:id", "404")).toBe(1);
      expect(count("GET", "/plants", "200")).toBe(1);
      expect(count("GET", "unmatched", "404")).toBe(1);
      expect(count("GET", "/plants/changes", "200")).toBe(1);
      // Route patterns only: no concrete id, path or query ever becomes a label.
      const routes = new Set(samples.filter((s) => s.family.startsWith("http_")).map((s) => s.labels.route));
      expect([...routes].filter(Boolean).sort()).toEqual(["/plants", "/plants/:id", "/plants/changes", "unmatched"]);

      const created = { method: "POST", route: "/plants", status: "200" };
      expect(sample(samples, "http_request_duration_seconds_count", created)?.type).toBe("histogram");
      expect(sample(samples, "http_request_duration_seconds_count", created)?.value).toBe(3);
      expect(sample(samples, "http_request_duration_seconds_bucket", { ...created, le: "+Inf" })?.value).toBe(3);
      expect(sample(samples, "http_request_duration_seconds_sum", created)?.value).toBeGreaterThan(0);
      const buckets = samples.filter(
        (s) =>
          s.name === "http_request_duration_seconds_bucket" && s.labels.status === "200" && s.labels.method === "POST",
      );
      expect(buckets.length).toBeGreaterThan(5);
      // Cumulative: each bucket holds at least what the one below it holds.
      for (let i = 1; i < buckets.length; i++) {
        expect(buckets[i]?.value).toBeGreaterThanOrEqual(buckets[i - 1]?.value ?? 0);
      }
      const conflict = { method: "POST", route: "/plants", status: "409" };
      expect(sample(samples, "http_request_duration_seconds_count", conflict)?.value).toBe(1);

      const gauge = (name: string) => sample(samples, name)?.value;
      const pages = t.sqlite.query<{ bytes: number }, []>(
        "SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()",
      );
      expect(gauge("plant_store_database_bytes")).toBe(pages.get()?.bytes as number);
      // A scrape is not an API request: nothing is in flight between requests.
      expect(gauge("http_requests_in_flight")).toBe(0);
      expect(gauge("process_resident_memory_bytes")).toBeGreaterThan(0);
      // What this instance did, counted once acknowledged: not the 409, not the 404.
      expect(sample(samples, "plant_store_plants_created_total")).toMatchObject({ type: "counter", value: 3 });
      expect(sample(samples, "plant_store_plants_deleted_total")).toMatchObject({ type: "counter", value: 1 });
      // No figure that a scrape would have to count: plants and users are not read at all.
      expect(samples.filter((s) => s.name === "plant_store_plants" || s.name === "plant_store_users")).toEqual([]);
    },
  );

  test.if(onSqlite)(
    "a scrape reads neither the plants nor the users table, so its cost does not grow with the store",
    async () => {
      const t = await observedApp();
      await t.createPlant("1", "Fern", await t.tokenFor("alice"));
      t.sqlite.run("PRAGMA foreign_keys = OFF");
      for (const table of ["plants", "tokens", "users"]) t.sqlite.run(`DROP TABLE ${table}`);
      const samples = await t.scrape();
      expect(sample(samples, "plant_store_database_bytes")?.value).toBeGreaterThan(0);
    },
  );

  test("hostile methods and paths cannot grow the number of series", async () => {
    const t = await observedApp();
    // Bun's Request turns a method it does not know into GET; these it keeps.
    const methods = ["PROPFIND", "MKCOL", "LOCK", "UNLOCK", "REPORT"];
    for (let i = 0; i < 20; i++) {
      await t.send(methods[i % methods.length] as string, `/random/${i}`);
      await t.send("GET", `/plants/${i}/more`);
    }
    const samples = await t.scrape();
    const series = samples.filter((s) => s.name === "http_requests_total").map((s) => s.labels);
    expect(series).toEqual([
      { method: "other", route: "unmatched", status: "404" },
      { method: "GET", route: "unmatched", status: "404" },
    ]);
  });

  test("the metrics listener answers GET /metrics only; with METRICS_TOKEN set, it wants it as a bearer token", async () => {
    const secret = "metrics-secret-0123456789";
    const t = await makeTestApp();
    const logged: unknown[] = [];
    const metricsApp = createMetricsApp({ metrics: t.ops.metrics, token: secret, log: (...line) => logged.push(line) });
    const scrape = (path: string, init: RequestInit = {}) => metricsApp(new Request(`${BASE}${path}`, init));
    const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

    const without = scrape("/metrics");
    expect(without.headers.get("www-authenticate")).toBe('Bearer realm="metrics"');
    const message = await expectError(without, 401);
    expect(message).toBe("Metrics need the header Authorization: Bearer <METRICS_TOKEN>.");
    expect(message).not.toContain(secret);
    expect(scrape("/metrics", bearer(`${secret}x`)).status).toBe(401);
    expect(scrape("/metrics", bearer(await t.tokenFor("alice"))).status).toBe(401);
    expect(scrape("/metrics", { headers: { authorization: `Basic ${secret}` } }).status).toBe(401);
    expect(scrape("/metrics", bearer(secret)).status).toBe(200);
    expect(scrape("/metrics?x=1", { headers: { authorization: `bearer ${secret}` } }).status).toBe(200);

    for (const path of ["/", "/healthz", "/plants", "/metrics/", "/metricsx"]) {
      expect(await expectError(scrape(path, bearer(secret)), 404)).toBe("No route matches this path.");
    }
    const post = scrape("/metrics", { method: "POST", ...bearer(secret) });
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    await expectError(post, 405);
    expect(logged).toEqual([]);
  });

  test.if(onSqlite)("a scrape that fails is a 500 with the Error body, and the fault is logged", async () => {
    const t = await makeTestApp();
    const logged: Array<[string, unknown]> = [];
    const metricsApp = createMetricsApp({
      metrics: t.ops.metrics,
      token: undefined,
      log: (message, detail) => logged.push([message, detail]),
    });
    t.sqlite.close(true);
    const response = metricsApp(new Request(`${BASE}/metrics`));
    expect(await expectError(response, 500)).toBe("Internal server error; the failure has been logged.");
    expect(logged.map(([message]) => message)).toEqual(["metrics scrape failed"]);
  });
});

describe("request ids and the access log", () => {
  test("every response carries an X-Request-Id, generated when the client sent none", async () => {
    const t = await observedApp();
    const token = await t.tokenFor("alice");
    const responses = [
      await t.send("GET", "/plants", { token }),
      await t.send("GET", "/plants"),
      await t.send("POST", "/plants", { token, json: { id: "x" } }),
      await t.send("GET", "/healthz"),
      await t.send("PUT", "/plants"),
      await t.send("GET", "/nowhere"),
    ];
    const ids = responses.map((response) => response.headers.get("x-request-id") ?? "");
    for (const id of ids) expect(id).toMatch(UUID);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test("a sane X-Request-Id is kept; anything else is replaced", async () => {
    const t = await observedApp();
    const idFor = async (value: string) =>
      (await t.send("GET", "/healthz", { headers: { "x-request-id": value } })).headers.get("x-request-id");
    expect(await idFor("trace-0af7651916cd43dd8448eb211c80319c")).toBe("trace-0af7651916cd43dd8448eb211c80319c");
    expect(await idFor("a".repeat(128))).toBe("a".repeat(128));
    // A token sent in the wrong header must not reach the log as the request's id.
    const token = await t.tokenFor("alice");
    for (const insane of ["a".repeat(129), "two words", '{"json":1}', "é", "a\tb", token]) {
      expect(await idFor(insane)).toMatch(UUID);
    }
  });

  test("one JSON line per request: method, route pattern, status, duration, request id, user id", async () => {
    const t = await observedApp();
    const token = await t.tokenFor("alice");
    const userId = (await t.tokens.authenticate(token))?.id;
    expect(userId).toBeNumber();
    const created = await t.send("POST", "/plants", {
      token,
      json: { id: 5, name: "Fern" },
      headers: { "x-request-id": "create-5" },
    });
    const deleted = await t.send("DELETE", "/plants/5", { token });
    const refused = await t.send("GET", "/plants");

    expect(t.lines).toHaveLength(3);
    const [create, remove, unauthorized] = t.lines;
    expect(create).toEqual({
      level: "info",
      time: expect.any(String),
      msg: "request",
      reqId: "create-5",
      method: "POST",
      route: "/plants",
      status: 200,
      ms: expect.any(Number),
      userId,
    });
    expect(created.headers.get("x-request-id")).toBe("create-5");
    expect(remove).toMatchObject({ method: "DELETE", route: "/plants/:id", status: 204, userId });
    expect(remove?.reqId).toBe(deleted.headers.get("x-request-id") ?? "");
    expect(unauthorized).toMatchObject({ method: "GET", route: "/plants", status: 401 });
    expect(unauthorized).not.toHaveProperty("userId");
    expect(refused.headers.get("x-request-id")).toBe(String(unauthorized?.reqId));
    expect(Number.isNaN(Date.parse(String(create?.time)))).toBe(false);
  });

  test("a failed authentication's line names the client its limit counts: behind a trusted proxy, the forwarded one", async () => {
    const trustProxy = [parseTrustedProxy("127.0.0.1")].filter((range) => range !== undefined);
    const t = await observedApp({ trustProxy, authFailuresPerMinute: 1 });
    const token = await t.tokenFor("alice");
    const viaProxy = { peer: "127.0.0.1", headers: { "x-forwarded-for": "203.0.113.66" } };
    await t.send("GET", "/plants", { ...viaProxy, token: "pst_guess" });
    await t.send("GET", "/plants", { ...viaProxy, token: "pst_guess" });
    await t.send("GET", "/plants", { ...viaProxy, token });
    await t.send("GET", "/plants", { peer: "::ffff:192.0.2.7", headers: { "x-forwarded-for": "203.0.113.66" } });
    expect(t.lines.map((line) => [line.status, line.client])).toEqual([
      [401, "203.0.113.66"],
      [429, "203.0.113.66"],
      [200, undefined],
      [401, "192.0.2.7"],
    ]);
  });

  test("a 404's line holds the path, without its query; other lines hold none", async () => {
    const t = await observedApp();
    const token = await t.tokenFor("alice");
    await t.send("GET", "/plantz?q=query-marker", { token });
    await t.send("GET", "/plants/99", { token });
    await t.send("GET", `/nowhere/${"x".repeat(300)}`);
    await t.send("GET", "/plants", { token });
    expect(t.lines.map(({ route, status, path }) => ({ route, status, path }))).toEqual([
      { route: "unmatched", status: 404, path: "/plantz" },
      { route: "/plants/:id", status: 404, path: "/plants/99" },
      { route: "unmatched", status: 404, path: `/nowhere/${"x".repeat(191)}…` },
      { route: "/plants", status: 200, path: undefined },
    ]);
    expect(JSON.stringify(t.lines)).not.toContain("query-marker");
  });

  test("log lines hold no token, header, query or body", async () => {
    const t = await observedApp();
    const token = await t.tokenFor("alice");
    await t.send("POST", "/plants", { token, json: { id: 1, name: "body-marker" } });
    await t.send("GET", `/plants?access_token=${token}&q=query-marker`, { token });
    await t.send("GET", "/plants", { token: `${token}x` });
    const text = JSON.stringify(t.lines);
    for (const secret of [token, token.slice(4), "body-marker", "query-marker", "Bearer", "access_token"]) {
      expect(text).not.toContain(secret);
    }
  });

  test.if(onSqlite)(
    "a fault's log line carries the request id of the request that failed; the access line is an error",
    async () => {
      const t = await observedApp();
      const token = await t.tokenFor("alice");
      t.sqlite.run("DROP TABLE plants");
      const response = await t.send("POST", "/plants", { token, json: { id: 1, name: "Fern" } });
      expect(response.status).toBe(500);
      const id = response.headers.get("x-request-id");
      const [fault, access] = t.lines;
      expect(fault).toMatchObject({ level: "error", msg: "unhandled error", reqId: id });
      expect(JSON.stringify(fault)).toContain("no such table");
      expect(access).toMatchObject({ level: "error", msg: "request", reqId: id, status: 500 });
    },
  );

  test.if(onSqlite)("LOG_LEVEL=warn keeps faults and drops the lines of requests that went well", async () => {
    const t = await observedApp({}, "warn");
    const token = await t.tokenFor("alice");
    await t.send("GET", "/plants", { token });
    expect(t.lines).toEqual([]);
    t.sqlite.run("DROP TABLE plants");
    await t.send("GET", "/plants", { token });
    expect(t.lines.map((line) => line.level)).toEqual(["error", "error"]);
  });
});

// Server processes on SQLite files: SQLite only.
