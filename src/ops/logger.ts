import type { LogFormat, LogLevel } from "../config";
import { stdoutDestination } from "./log-output";
import type { RequestNotes } from "./request-id";

/** Where lines go: stdout's buffered writer, or a test's collector. */
export interface LineSink {
  write(line: string): void;
}

export interface LoggerOptions {
  level: LogLevel;
  format: LogFormat;
  /** Where the lines go instead of stdout (tests). */
  destination?: LineSink;
}

let isoMillis = 0;
let isoText = "";
/** The time as pino writes it, formatted at most once per millisecond. */
function isoNow(): string {
  const now = Date.now();
  if (now !== isoMillis) {
    isoMillis = now;
    isoText = new Date(now).toISOString();
  }
  return isoText;
}

/** pino's level numbers: a line is written when its level's number reaches the logger's. */
const LEVEL_VALUES: Record<LogLevel, number> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
  silent: Number.POSITIVE_INFINITY,
};
type LineLevel = Exclude<LogLevel, "silent">;

/** An Error as pino's `err` serializer shows it: its type, message and stack, then its own fields. */
function errorFields(error: Error): Record<string, unknown> {
  const fields: Record<string, unknown> = { type: error.constructor?.name || error.name, message: error.message };
  for (const key in error) if (!(key in fields)) fields[key] = (error as unknown as Record<string, unknown>)[key];
  if (error.cause !== undefined) fields.cause = error.cause;
  fields.stack = error.stack;
  return fields;
}

const withErrors = (_key: string, value: unknown) => (value instanceof Error ? errorFields(value) : value);

/**
 * A line's fields as JSON. A value JSON cannot take must not cost the line, nor throw inside
 * the code that logs a fault: the second try writes a repeated object as "[Circular]" and a
 * BigInt as its digits; a value that throws when read (a getter, a toJSON) leaves a field
 * saying so in place of the fields.
 */
function fieldsJson(fields: object): string {
  try {
    return JSON.stringify(fields, withErrors);
  } catch {
    const seen = new WeakSet<object>();
    try {
      return JSON.stringify(fields, (key, value: unknown) => {
        if (typeof value === "bigint") return value.toString();
        if (typeof value !== "object" || value === null) return value;
        if (seen.has(value)) return "[Circular]";
        seen.add(value);
        return withErrors(key, value);
      });
    } catch (error) {
      const reason = error instanceof Error ? `${error.name}: ${error.message}` : "unknown";
      return JSON.stringify({ logFieldsUnwritable: reason });
    }
  }
}

/**
 * JSON lines in pino's shape (`{"level":"info","time":"…",…fields,"msg":"…"}`), written by hand
 * for the few calls the service makes: pino itself cost every start 9.5 ms and 7 MiB (see the
 * README's Cold start section for how that was measured).
 */
export class Logger {
  readonly #threshold: number;

  constructor(
    readonly level: LogLevel,
    readonly write: (line: string) => void,
  ) {
    this.#threshold = LEVEL_VALUES[level];
  }

  isLevelEnabled(level: LineLevel): boolean {
    return LEVEL_VALUES[level] >= this.#threshold;
  }

  /** The same lines at another level. */
  atLevel(level: LogLevel): Logger {
    return new Logger(level, this.write);
  }

  info(fieldsOrMessage: object | string, message?: string) {
    this.#line("info", fieldsOrMessage, message);
  }

  warn(fieldsOrMessage: object | string, message?: string) {
    this.#line("warn", fieldsOrMessage, message);
  }

  error(fieldsOrMessage: object | string, message?: string) {
    this.#line("error", fieldsOrMessage, message);
  }

  #line(level: LineLevel, fieldsOrMessage: object | string, message: string | undefined) {
    if (!this.isLevelEnabled(level)) return;
    const fields = typeof fieldsOrMessage === "string" ? "{}" : fieldsJson(fieldsOrMessage);
    const msg = typeof fieldsOrMessage === "string" ? fieldsOrMessage : message;
    const parts = [`"level":"${level}"`, `"time":"${isoNow()}"`];
    if (fields.length > 2) parts.push(fields.slice(1, -1));
    if (msg !== undefined) parts.push(`"msg":${JSON.stringify(msg)}`);
    this.write(`{${parts.join(",")}}\n`);
  }
}

/** The fields of a request's one access-log line. */
export interface AccessLine {
  reqId: string;
  method: string;
  route: string;
  status: number;
  ms: number;
  userId: number | undefined;
}

/**
 * The access log, one line per request, in the same shape as every other line, written
 * directly: at tens of thousands of requests a second, a generic serializer was the larger
 * part of the cost of logging.
 */
function accessLog(logger: Logger) {
  return (line: AccessLine) => {
    const level = line.status >= 500 ? "error" : "info";
    if (!logger.isLevelEnabled(level)) return;
    const user = line.userId === undefined ? "" : `,"userId":${line.userId}`;
    logger.write(
      `{"level":"${level}","time":"${isoNow()}","reqId":${JSON.stringify(line.reqId)},` +
        `"method":${JSON.stringify(line.method)},"route":${JSON.stringify(line.route)},"status":${line.status},` +
        `"ms":${line.ms}${user},"msg":"request"}\n`,
    );
  };
}

/**
 * JSON lines on stdout, or "pretty" lines for a developer's terminal (pino-pretty, loaded only
 * then); `destination` replaces stdout (tests). `flush` empties the buffer before the process exits.
 */
export async function createLogger({ level, format, destination }: LoggerOptions) {
  const stdout = destination ? undefined : stdoutDestination();
  const sink = destination ?? (stdout as LineSink);
  let write = (line: string) => sink.write(line);
  if (format === "pretty" && !destination) {
    const { prettyFactory } = await import("pino-pretty");
    const pretty = prettyFactory({ translateTime: "SYS:HH:MM:ss.l", colorize: process.stdout.isTTY });
    write = (line) => sink.write(pretty(line));
  }
  const logger = new Logger(level, write);
  return { logger, access: accessLog(logger), flush: async () => void (await stdout?.flush()) };
}

/**
 * The app's fault log on top of the logger: the line carries the id of the request that
 * failed. Whoever catches a fault passes it through `faultDetail` first (no query values).
 */
export function faultLog(logger: Logger, notes: RequestNotes) {
  return (message: string, detail: unknown, request?: Request) =>
    logger.error({ reqId: request && notes.get(request)?.id, err: detail }, message);
}

/**
 * For start, drain and stop: an operator (and a supervisor waiting for "listening") sees them
 * even when LOG_LEVEL=warn hides the request lines. Only "silent" silences them.
 */
export function lifecycleLogger(logger: Logger): Logger {
  const quieterThanInfo = !logger.isLevelEnabled("info") && logger.level !== "silent";
  return quieterThanInfo ? logger.atLevel("info") : logger;
}
