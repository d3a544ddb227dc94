/** The server as it runs: its log lines on stdout, LOG_LEVEL and LOG_FORMAT, the metrics listener. The same app in process: tests/api/ops.test.ts. */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { onSqlite } from "../support/helpers";
import { type RunningServer, runToExit, scratchDir, startServer } from "../support/process";
import { parsePrometheusText, sample } from "../support/prometheus";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { bootstrapToken } from "../support/users";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

describe.if(onSqlite)("the running server", () => {
  let server: RunningServer | undefined;
  let scratch: ReturnType<typeof scratchDir> | undefined;
  afterEach(async () => {
    if (server) await server.stop();
    server = undefined;
    scratch?.cleanup();
  });

  test("every line on stdout after the first-start token is a JSON log line", async () => {
    scratch = scratchDir();
    server = await startServer({ DATABASE_URL: `${scratch.dir}/plants.sqlite` });
    const token = bootstrapToken(server);
    // Without METRICS_PORT there is no metrics listener.
    expect(server.startupOutput).not.toContain("metrics");
    expect((await fetch(`${server.url}/plants`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect(await server.stop()).toBe(0);
    const { stdout, stderr } = await server.streams();
    // Stderr holds nothing but bun run's echo of the command and, when this start built it, the
    // start bundle's announcement.
    const unexpected = (line: string) =>
      line !== "" && !line.startsWith("$ ") && !line.startsWith("plant-store: building the start bundle");
    expect(stderr.split("\n").filter(unexpected)).toEqual([]);
    const lines = stdout.split("\n").filter((line) => line !== "");
    const firstJson = lines.findIndex((line) => line.startsWith("{"));
    expect(lines.slice(0, firstJson).join("\n")).toContain("First start");
    const json = lines.slice(firstJson).filter((line) => !line.startsWith("$ "));
    for (const line of json) expect(() => JSON.parse(line)).not.toThrow();
    expect(json.map((line) => JSON.parse(line).msg)).toEqual([
      expect.stringContaining("listening on"),
      "request",
      "request",
      "SIGTERM received: finishing requests in flight, then closing",
      "Stopped cleanly.",
    ]);
    server = undefined;
  });

  test("LOG_LEVEL=warn drops request lines but still announces start and stop", async () => {
    scratch = scratchDir();
    server = await startServer({ DATABASE_URL: `${scratch.dir}/plants.sqlite`, LOG_LEVEL: "warn" });
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect(await server.stop()).toBe(0);
    const output = await server.output();
    expect(output).not.toContain('"msg":"request"');
    expect(output).toContain("Stopped cleanly.");
    server = undefined;
  });

  test("LOG_FORMAT=pretty writes readable lines, not JSON", async () => {
    scratch = scratchDir();
    server = await startServer({ DATABASE_URL: `${scratch.dir}/plants.sqlite`, LOG_FORMAT: "pretty" });
    const response = await fetch(`${server.url}/healthz`, { headers: { "x-request-id": "pretty-one" } });
    expect(response.headers.get("x-request-id")).toBe("pretty-one");
    await server.waitForOutput(/pretty-one/);
    expect(await server.stop()).toBe(0);
    const line = (await server.output()).split("\n").find((l) => l.includes("INFO") && l.includes("request"));
    expect(line).toBeDefined();
    expect(line?.startsWith("{")).toBe(false);
    expect(await server.output()).toMatch(/reqId: "pretty-one"/);
    server = undefined;
  });

  test("logs JSON lines whose request ids match the responses", async () => {
    scratch = scratchDir();
    server = await startServer({ DATABASE_URL: `${scratch.dir}/plants.sqlite` });
    const response = await fetch(`${server.url}/plants`, { headers: { "x-request-id": "from-the-client" } });
    expect(response.status).toBe(401);
    expect(response.headers.get("x-request-id")).toBe("from-the-client");
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    await server.waitForOutput(/"reqId":"from-the-client"/);
    expect(await server.stop()).toBe(0);

    const lines = (await server.output())
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line));
    expect(lines.find((line) => line.reqId === "from-the-client")).toMatchObject({
      level: "info",
      msg: "request",
      method: "GET",
      route: "/plants",
      status: 401,
    });
    expect(lines.at(-1)).toMatchObject({ level: "info", msg: "Stopped cleanly." });
    server = undefined;
  });

  test("metrics are on their own listener, bound to 127.0.0.1 only; the API's port has no /metrics", async () => {
    scratch = scratchDir();
    const secret = "metrics-secret-0123456789";
    server = await startServer({
      DATABASE_URL: `${scratch.dir}/plants.sqlite`,
      HOST: "0.0.0.0",
      METRICS_PORT: "0",
      METRICS_TOKEN: secret,
    });
    const metricsUrl = /"metricsUrl":"([^"]+)"/.exec(server.startupOutput)?.[1] as string;
    expect(server.startupOutput).toContain(`metrics at ${metricsUrl}`);
    const metrics = new URL(metricsUrl);
    expect(metrics.hostname).toBe("127.0.0.1");
    expect(metrics.pathname).toBe("/metrics");
    const apiPort = new URL(server.url).port;
    const bearer = { headers: { authorization: `Bearer ${secret}` } };

    expect((await fetch(`http://127.0.0.1:${apiPort}/metrics`, bearer)).status).toBe(404);
    // All of 127/8 reaches this host: the API (on 0.0.0.0) answers at 127.0.0.2, metrics do not.
    expect((await fetch(`http://127.0.0.2:${apiPort}/healthz`)).status).toBe(200);
    expect(await fetch(`http://127.0.0.2:${metrics.port}/metrics`, bearer).catch((error) => error.code)).toBe(
      "ECONNREFUSED",
    );

    expect((await fetch(metricsUrl)).status).toBe(401);
    const scraped = await fetch(metricsUrl, bearer);
    expect(scraped.status).toBe(200);
    const samples = await parsePrometheusText(await scraped.text());
    expect(sample(samples, "http_requests_total", { route: "/healthz", status: "200" })?.value).toBe(1);
    expect(sample(samples, "http_requests_total", { route: "unmatched", status: "404" })?.value).toBe(1);
    expect(await server.stop()).toBe(0);
    expect(await server.output()).toContain("Stopped cleanly.");
    server = undefined;
  });

  test("a METRICS_PORT already in use stops start-up with one line and exit 1", async () => {
    scratch = scratchDir();
    const taken = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("taken") });
    try {
      const { stdout, stderr, code } = await runToExit(["bun", "src/index.ts"], {
        env: {
          PORT: "0",
          HOST: "127.0.0.1",
          DATABASE_URL: `${scratch.dir}/plants.sqlite`,
          METRICS_PORT: `${taken.port}`,
        },
      });
      expect(code).toBe(1);
      expect(stdout).not.toContain("listening");
      const lines = stderr.trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toStartWith(`plant-store: cannot listen for metrics on 127.0.0.1:${taken.port}: `);
    } finally {
      await taken.stop(true);
    }
  });
});
