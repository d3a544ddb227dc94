import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../src/config";

describe("configuration", () => {
  test("defaults match the SPEC", () => {
    expect(loadConfig({})).toEqual({
      port: 3000,
      host: "0.0.0.0",
      database: { engine: "sqlite", path: "./data/plants.sqlite" },
      databaseName: "./data/plants.sqlite",
      synchronous: "FULL",
      bodyLimitBytes: 65536,
      bodyTimeoutMs: 10000,
      rateLimitPerMinute: 6000,
      authFailuresPerMinute: 100,
      trustProxy: [],
      maxInFlight: 1024,
      writeLockTimeoutMs: 5000,
      startupTimeoutMs: 30000,
      idleTimeoutSeconds: 30,
      shutdownTimeoutMs: 10000,
      corsOrigins: [],
      logLevel: "info",
      logFormat: "json",
      metricsPort: undefined,
      metricsHost: "127.0.0.1",
      metricsToken: undefined,
      swaggerPersistAuthorization: false,
      webhookAllowPrivate: false,
      webhookRetryDelaysMs: [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
      webhookRetentionDays: 30,
      idempotencyTtlHours: 24,
      changesRetentionHours: 72,
      changeStreamsPerToken: 5,
      maxChangeStreams: 1000,
    });
  });

  test("WEBHOOK_RETENTION_DAYS takes whole days, 0 keeping every delivery, and refuses anything else", () => {
    expect(loadConfig({ WEBHOOK_RETENTION_DAYS: " 7 " }).webhookRetentionDays).toBe(7);
    expect(loadConfig({ WEBHOOK_RETENTION_DAYS: "0" }).webhookRetentionDays).toBe(0);
    for (const bad of ["-1", "1.5", "30d", "36501"]) {
      expect(() => loadConfig({ WEBHOOK_RETENTION_DAYS: bad })).toThrow(
        new ConfigError("WEBHOOK_RETENTION_DAYS must be an integer between 0 and 36500"),
      );
    }
  });

  test("IDEMPOTENCY_TTL_HOURS takes whole hours from 1 to a year, and refuses anything else", () => {
    expect(loadConfig({ IDEMPOTENCY_TTL_HOURS: " 48 " }).idempotencyTtlHours).toBe(48);
    for (const bad of ["0", "-1", "1.5", "24h", "8761"]) {
      expect(() => loadConfig({ IDEMPOTENCY_TTL_HOURS: bad })).toThrow(
        new ConfigError("IDEMPOTENCY_TTL_HOURS must be an integer between 1 and 8760"),
      );
    }
  });

  test("WEBHOOK_RETRY_DELAYS takes comma-separated milliseconds and refuses anything else", () => {
    expect(loadConfig({ WEBHOOK_RETRY_DELAYS: " 50, 0,1000 " }).webhookRetryDelaysMs).toEqual([50, 0, 1000]);
    for (const bad of ["5s", "1,,2", "-1", "1.5", `${8 * 24 * 3_600_000}`, Array(51).fill("1").join(",")]) {
      expect(() => loadConfig({ WEBHOOK_RETRY_DELAYS: bad })).toThrow(/WEBHOOK_RETRY_DELAYS must be/);
    }
    expect(loadConfig({ WEBHOOK_ALLOW_PRIVATE: "true" }).webhookAllowPrivate).toBe(true);
    expect(() => loadConfig({ WEBHOOK_ALLOW_PRIVATE: "yes" })).toThrow(
      /WEBHOOK_ALLOW_PRIVATE must be one of true, false/,
    );
  });

  test("RATE_LIMIT_PER_MINUTE=0 turns off the limit on failed authentications too", () => {
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: "0" }).authFailuresPerMinute).toBe(0);
    expect(loadConfig({ AUTH_FAILURES_PER_MINUTE: "7" }).authFailuresPerMinute).toBe(7);
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: "0", AUTH_FAILURES_PER_MINUTE: "7" }).authFailuresPerMinute).toBe(0);
  });

  test("DATABASE_URL takes a plain path, a file: URL or :memory:", () => {
    const sqlite = (path: string) => ({ database: { engine: "sqlite", path }, databaseName: path });
    expect(loadConfig({ DATABASE_URL: "/var/lib/p.db" })).toMatchObject(sqlite("/var/lib/p.db"));
    expect(loadConfig({ DATABASE_URL: "file:./x.sqlite" })).toMatchObject(sqlite("./x.sqlite"));
    expect(loadConfig({ DATABASE_URL: "file:///srv/x.sqlite" })).toMatchObject(sqlite("/srv/x.sqlite"));
    expect(loadConfig({ DATABASE_URL: ":memory:" })).toMatchObject(sqlite(":memory:"));
  });

  test("DATABASE_URL takes a postgres:// URL, with the pool settings from DB_POOL_SIZE and the timeouts", () => {
    expect(loadConfig({ DATABASE_URL: "postgres://db/plants" }).database).toEqual({
      engine: "postgres",
      url: "postgres://db/plants",
      poolSize: 10,
      connectTimeoutMs: 5000,
      statementTimeoutMs: 10000,
    });
    expect(
      loadConfig({
        DATABASE_URL: "postgres://db/plants",
        DB_POOL_SIZE: "4",
        DB_CONNECT_TIMEOUT_MS: "2000",
        DB_STATEMENT_TIMEOUT_MS: "30000",
      }).database,
    ).toMatchObject({ engine: "postgres", poolSize: 4, connectTimeoutMs: 2000, statementTimeoutMs: 30000 });
  });

  test.each([
    [{ PORT: "http" }, "PORT must be an integer between 0 and 65535"],
    [{ PORT: "70000" }, "PORT must be an integer between 0 and 65535"],
    [{ PORT: "-1" }, "PORT must be an integer between 0 and 65535"],
    [{ DB_SYNCHRONOUS: "sometimes" }, "DB_SYNCHRONOUS must be one of OFF, NORMAL, FULL, EXTRA"],
    [
      { DATABASE_URL: "mysql://db/plants" },
      "DATABASE_URL must be a SQLite path, a file: URL, :memory: or a postgres:// URL",
    ],
    [{ BODY_LIMIT_BYTES: "10" }, "BODY_LIMIT_BYTES must be an integer between 1024 and 16777216"],
    [{ RATE_LIMIT_PER_MINUTE: "-5" }, "RATE_LIMIT_PER_MINUTE must be an integer between 0 and 10000000"],
    [{ MAX_IN_FLIGHT: "0" }, "MAX_IN_FLIGHT must be an integer between 1 and 1000000"],
    [{ DB_STARTUP_TIMEOUT_MS: "30s" }, "DB_STARTUP_TIMEOUT_MS must be an integer between 0 and 3600000"],
    [{ CORS_ORIGINS: "*" }, "CORS_ORIGINS must be a comma-separated list of origins such as https://app.example.com"],
    [{ LOG_LEVEL: "loud" }, "LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent"],
    [{ LOG_FORMAT: "xml" }, "LOG_FORMAT must be one of json, pretty"],
    [{ METRICS_PORT: "metrics" }, "METRICS_PORT must be an integer between 0 and 65535"],
    [{ METRICS_PORT: "3000" }, "METRICS_PORT must differ from PORT"],
    [{ PORT: "8080", METRICS_PORT: "8080" }, "METRICS_PORT must differ from PORT"],
    [{ METRICS_TOKEN: "m".repeat(16) }, "METRICS_TOKEN needs METRICS_PORT: metrics are off without it"],
    [{ METRICS_PORT: "9464", METRICS_TOKEN: "short" }, "METRICS_TOKEN must be at least 16 visible ASCII characters"],
    [{ SWAGGER_PERSIST_AUTHORIZATION: "yes" }, "SWAGGER_PERSIST_AUTHORIZATION must be one of true, false"],
    [
      { TRUST_PROXY: "127.0.0.1, localhost" },
      'TRUST_PROXY must be a comma-separated list of IP addresses or CIDR ranges (e.g. 127.0.0.1,10.0.0.0/8,::1); "localhost" is neither',
    ],
    [
      { TRUST_PROXY: "10.0.0.0/33" },
      'TRUST_PROXY must be a comma-separated list of IP addresses or CIDR ranges (e.g. 127.0.0.1,10.0.0.0/8,::1); "10.0.0.0/33" is neither',
    ],
    [
      { CORS_ORIGINS: "https://a.example/path" },
      "CORS_ORIGINS must be a comma-separated list of origins such as https://app.example.com",
    ],
  ])("%o is refused with one clear line", (env, message) => {
    expect(() => loadConfig(env)).toThrow(new ConfigError(message));
  });

  test("TRUST_PROXY is a list of addresses and CIDR ranges, IPv4 and IPv6; empty by default", () => {
    const ranges = loadConfig({ TRUST_PROXY: " 127.0.0.1, 10.0.0.0/8,,::1 , fd00::/8" }).trustProxy;
    expect(ranges.map(([address, prefix]) => `${address}/${prefix}`)).toEqual([
      "127.0.0.1/32",
      "10.0.0.0/8",
      "::1/128",
      "fd00::/8",
    ]);
    expect(loadConfig({ TRUST_PROXY: " " }).trustProxy).toEqual([]);
  });

  test("CORS_ORIGINS is a list of exact origins", () => {
    expect(loadConfig({ CORS_ORIGINS: "https://a.example, http://localhost:5173" }).corsOrigins).toEqual([
      "https://a.example",
      "http://localhost:5173",
    ]);
  });

  test("values are read exactly", () => {
    const config = loadConfig({ PORT: "8080", HOST: "127.0.0.1", DB_SYNCHRONOUS: "normal", BODY_LIMIT_BYTES: "2048" });
    expect(config).toMatchObject({ port: 8080, host: "127.0.0.1", synchronous: "NORMAL", bodyLimitBytes: 2048 });
    const ops = loadConfig({
      LOG_LEVEL: "WARN",
      LOG_FORMAT: "pretty",
      METRICS_PORT: "9464",
      METRICS_HOST: "10.0.0.5",
      METRICS_TOKEN: "m".repeat(16),
    });
    expect(ops).toMatchObject({
      logLevel: "warn",
      logFormat: "pretty",
      metricsPort: 9464,
      metricsHost: "10.0.0.5",
      metricsToken: "mmmmmmmmmmmmmmmm",
    });
    expect(loadConfig({ SWAGGER_PERSIST_AUTHORIZATION: "TRUE" }).swaggerPersistAuthorization).toBe(true);
    // 0 picks a free port, even beside PORT=0.
    expect(loadConfig({ PORT: "0", METRICS_PORT: "0" })).toMatchObject({ port: 0, metricsPort: 0 });
  });
});
