import pino from "pino";
import type { LogFormat, LogLevel } from "../config";
import type { RequestNotes } from "./request-id";

export type Logger = pino.Logger;

export interface LoggerOptions {
  level: LogLevel;
  format: LogFormat;
  /** Where the lines go instead of stdout (tests). */
  destination?: pino.DestinationStream;
}

/** How long a line may wait in the buffer when the service is quiet. */
const FLUSH_EVERY_MS = 50;
/** How long an explicit flush (start-up line, exit) waits for a slow reader. */
const FLUSH_WAIT_MS = 1000;

/**
 * Lines gathered in Bun's own buffered file writer: it writes when 64 KiB have gathered, and a
 * timer writes what is left every 50 ms. A request never waits for the terminal or the pipe,
 * and a busy moment's lines leave in a few large writes. (pino's default destination,
 * sonic-boom, measures every line's byte length and calls node:fs for each write, which cost
 * a fifth of a read's time here.)
 */
function stdoutDestination() {
  const sink = Bun.file(1).writer({ highWaterMark: 64 * 1024 });
  setInterval(() => sink.flush(), FLUSH_EVERY_MS).unref();
  return {
    write(line: string) {
      sink.write(line);
    },
    // Bounded: a reader that stopped reading must not keep the process from exiting.
    flush: () => Promise.race([sink.flush(), Bun.sleep(FLUSH_WAIT_MS)]),
  };
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

/**
 * The access log, one line per request, in the same shape pino gives every other line. In JSON
 * format the line is written directly: at tens of thousands of requests a second, pino's
 * generic serializer was the larger part of the cost of logging.
 */
function accessLog(logger: Logger, json: pino.DestinationStream | undefined) {
  if (!json) {
    return (line: AccessLine) => (line.status >= 500 ? logger.error(line, "request") : logger.info(line, "request"));
  }
  return (line: AccessLine) => {
    const level = line.status >= 500 ? "error" : "info";
    if (!logger.isLevelEnabled(level)) return;
    const user = line.userId === undefined ? "" : `,"userId":${line.userId}`;
    json.write(
      `{"level":"${level}","time":"${isoNow()}","reqId":${JSON.stringify(line.reqId)},` +
        `"method":${JSON.stringify(line.method)},"route":${JSON.stringify(line.route)},"status":${line.status},` +
        `"ms":${line.ms}${user},"msg":"request"}\n`,
    );
  };
}

/**
 * JSON lines on stdout, or "pretty" lines for a developer's terminal; `destination` replaces
 * stdout (tests). `flush` empties the buffer before the process exits.
 */
export async function createLogger({ level, format, destination }: LoggerOptions) {
  const options: pino.LoggerOptions = {
    level,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  if (format === "pretty") {
    const { default: pretty } = await import("pino-pretty");
    const stream =
      destination ?? pretty({ sync: true, translateTime: "SYS:HH:MM:ss.l", colorize: process.stdout.isTTY });
    const logger = pino(options, stream);
    return { logger, access: accessLog(logger, undefined), flush: () => {} };
  }
  const stdout = destination ? undefined : stdoutDestination();
  const json = destination ?? (stdout as pino.DestinationStream);
  const logger = pino(options, json);
  return { logger, access: accessLog(logger, json), flush: () => stdout?.flush() };
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
  const quieterThanInfo = logger.levelVal > (pino.levels.values.info ?? 30) && logger.level !== "silent";
  return quieterThanInfo ? logger.child({}, { level: "info" }) : logger;
}
