import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parseTrustedProxy, type TrustedProxies } from "./core/client-address";
import { databaseFrom, SYNCHRONOUS_MODES, type SynchronousMode, withoutPassword } from "./core/database";
import { ConfigError, choiceSetting, type Env, integerSetting } from "./core/settings";

export { ConfigError, withoutPassword };

const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
const LOG_FORMATS = ["json", "pretty"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Each setting is described in the README's configuration table. */
export type Config = ReturnType<typeof loadConfig>;

function metricsToken(env: Env): string | undefined {
  const raw = env.METRICS_TOKEN?.trim();
  if (raw === undefined || raw === "") return undefined;
  if (raw.length < 16 || !/^[\x21-\x7e]+$/.test(raw))
    throw new ConfigError("METRICS_TOKEN must be at least 16 visible ASCII characters");
  return raw;
}

/** Unset means no metrics listener; a port equal to PORT could never be bound beside it. */
function metricsPort(env: Env, port: number): number | undefined {
  if (!env.METRICS_PORT?.trim()) {
    if (env.METRICS_TOKEN?.trim())
      throw new ConfigError("METRICS_TOKEN needs METRICS_PORT: metrics are off without it");
    return undefined;
  }
  const metrics = integerSetting(env, "METRICS_PORT", 0, 0, 65535);
  if (metrics !== 0 && metrics === port) throw new ConfigError("METRICS_PORT must differ from PORT");
  return metrics;
}

/** Standard Webhooks' suggested schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const DEFAULT_RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
/** A retry planned further out than a week is surely a typo. */
const MAX_RETRY_DELAY_MS = 7 * 24 * 3_600_000;

function retryDelays(raw: string | undefined): number[] {
  const text = raw?.trim();
  if (text === undefined || text === "") return DEFAULT_RETRY_DELAYS_MS;
  const parts = text.split(",").map((part) => part.trim());
  if (parts.length > 50 || parts.some((part) => !/^[0-9]+$/.test(part) || Number(part) > MAX_RETRY_DELAY_MS)) {
    throw new ConfigError(
      `WEBHOOK_RETRY_DELAYS must be up to 50 comma-separated delays in milliseconds, each at most ${MAX_RETRY_DELAY_MS} (e.g. 5000,300000)`,
    );
  }
  return parts.map(Number);
}

/** A comma-separated setting's entries, blanks dropped. */
const entriesOf = (raw: string | undefined) =>
  (raw ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");

function trustedProxies(raw: string | undefined): TrustedProxies {
  return entriesOf(raw).map((entry) => {
    const range = parseTrustedProxy(entry);
    if (range) return range;
    const shown = JSON.stringify(entry.length > 60 ? `${entry.slice(0, 60)}…` : entry);
    throw new ConfigError(
      `TRUST_PROXY must be a comma-separated list of IP addresses or CIDR ranges (e.g. 127.0.0.1,10.0.0.0/8,::1); ${shown} is neither`,
    );
  });
}

function originList(raw: string | undefined): string[] {
  const origins = entriesOf(raw);
  for (const origin of origins) {
    const parsed = URL.parse(origin);
    if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin)
      throw new ConfigError("CORS_ORIGINS must be a comma-separated list of origins such as https://app.example.com");
  }
  return origins;
}

export function loadConfig(env: Env = process.env) {
  const synchronous = (env.DB_SYNCHRONOUS?.trim() || "FULL").toUpperCase();
  if (!(SYNCHRONOUS_MODES as readonly string[]).includes(synchronous))
    throw new ConfigError(`DB_SYNCHRONOUS must be one of ${SYNCHRONOUS_MODES.join(", ")}`);
  const database = databaseFrom(env);
  const port = integerSetting(env, "PORT", 3000, 0, 65535);
  const rateLimitPerMinute = integerSetting(env, "RATE_LIMIT_PER_MINUTE", 6000, 0, 10_000_000);
  const authFailuresPerMinute = integerSetting(env, "AUTH_FAILURES_PER_MINUTE", 100, 0, 10_000_000);
  return {
    port,
    host: env.HOST?.trim() || "0.0.0.0",
    database,
    /** The database as messages name it: never a password. */
    databaseName: database.engine === "sqlite" ? database.path : withoutPassword(database.url),
    synchronous: synchronous as SynchronousMode,
    bodyLimitBytes: integerSetting(env, "BODY_LIMIT_BYTES", 64 * 1024, 1024, 16 * 1024 * 1024),
    bodyTimeoutMs: integerSetting(env, "BODY_TIMEOUT_MS", 10_000, 100, 600_000),
    rateLimitPerMinute,
    // 0 turns every rate limit off, this one included.
    authFailuresPerMinute: rateLimitPerMinute === 0 ? 0 : authFailuresPerMinute,
    trustProxy: trustedProxies(env.TRUST_PROXY),
    maxInFlight: integerSetting(env, "MAX_IN_FLIGHT", 1024, 1, 1_000_000),
    writeLockTimeoutMs: integerSetting(env, "WRITE_LOCK_TIMEOUT_MS", 5_000, 0, 600_000),
    startupTimeoutMs: integerSetting(env, "DB_STARTUP_TIMEOUT_MS", 30_000, 0, 3_600_000),
    idleTimeoutSeconds: integerSetting(env, "IDLE_TIMEOUT_SECONDS", 30, 1, 255),
    shutdownTimeoutMs: integerSetting(env, "SHUTDOWN_TIMEOUT_MS", 10_000, 0, 600_000),
    corsOrigins: originList(env.CORS_ORIGINS),
    logLevel: choiceSetting(env, "LOG_LEVEL", LOG_LEVELS, "info"),
    logFormat: choiceSetting(env, "LOG_FORMAT", LOG_FORMATS, "json"),
    metricsPort: metricsPort(env, port),
    metricsHost: env.METRICS_HOST?.trim() || "127.0.0.1",
    metricsToken: metricsToken(env),
    swaggerPersistAuthorization:
      choiceSetting(env, "SWAGGER_PERSIST_AUTHORIZATION", ["true", "false"], "false") === "true",
    webhookAllowPrivate: choiceSetting(env, "WEBHOOK_ALLOW_PRIVATE", ["true", "false"], "false") === "true",
    webhookRetryDelaysMs: retryDelays(env.WEBHOOK_RETRY_DELAYS),
    // 0 keeps deliveries forever, as 0 turns other limits off: "keep none" would lose the log.
    webhookRetentionDays: integerSetting(env, "WEBHOOK_RETENTION_DAYS", 30, 0, 36_500),
    idempotencyTtlHours: integerSetting(env, "IDEMPOTENCY_TTL_HOURS", 24, 1, 8_760),
    changesRetentionHours: integerSetting(env, "CHANGES_RETENTION_HOURS", 72, 1, 8_760),
    changeStreamsPerToken: integerSetting(env, "CHANGE_STREAMS_PER_TOKEN", 5, 1, 1_000),
    maxChangeStreams: integerSetting(env, "MAX_CHANGE_STREAMS", 1_000, 1, 100_000),
  };
}

/** Creates the database's folder so a first start on a fresh machine just works. */
export function ensureDatabaseFolder(config: Config): void {
  if (config.database.engine !== "sqlite" || config.database.path === ":memory:") return;
  try {
    mkdirSync(dirname(resolve(config.database.path)), { recursive: true });
  } catch (error) {
    throw new ConfigError(
      `cannot create the folder for DATABASE_URL (${(error as NodeJS.ErrnoException).code ?? "error"})`,
    );
  }
}
