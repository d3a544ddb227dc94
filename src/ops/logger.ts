import pino from "pino";
import type { LogFormat, LogLevel } from "../config";
import type { RequestNotes } from "./request-id";

/** Where lines go instead of stdout (tests): one JSON line per call. */
export interface LineSink {
  write(line: string): void;
}

export interface LoggerOptions {
  level: LogLevel;
  format: LogFormat;
  destination?: LineSink;
}

/** How long a line may wait in stdout's buffer when the service is quiet. */
const FLUSH_EVERY_MS = 50;
/** How long the flush before exit waits for a reader that stopped reading. */
const FLUSH_WAIT_MS = 1000;

/** The fields of a request's one access-log line. */
export interface AccessLine {
  reqId: string;
  method: string;
  route: string;
  status: number;
  ms: number;
  userId: number | undefined;
  /** The client's address, on a failed authentication's line (the address its limit counts). */
  client?: string | undefined;
  /** The path without its query, on a 404's line (shortened past 200 characters). */
  path?: string | undefined;
}

const field = (name: string, value: string | number | undefined) =>
  value === undefined ? "" : `,"${name}":${typeof value === "number" ? value : JSON.stringify(value)}`;

/** The access line in pino's shape, built directly (decision 0013). Its id needs no escaping (request-id.ts lets
 * through [A-Za-z0-9._:/+=@-] only), nor its route, one of the app's own patterns. */
function accessText(level: "info" | "error", line: AccessLine, time: string): string {
  return `{"level":"${level}","time":"${time}","reqId":"${line.reqId}","method":${JSON.stringify(line.method)},"route":"${line.route}","status":${line.status},"ms":${line.ms}${field("userId", line.userId)}${field("client", line.client)}${field("path", line.path)},"msg":"request"}\n`;
}

/** A request's access line as its fields and its time, until its batch is written. */
interface PendingAccess {
  level: "info" | "error";
  line: AccessLine;
  at: number;
}

/** Characters gathered before they are handed on together: under sonic-boom's 16 KiB a write. */
const BATCH_CHARS = 12 * 1024;
/** What an access line is counted as until it is made into text. */
const ACCESS_LINE_CHARS = 200;

/** Lines go to sonic-boom a batch at a time, access lines made into text only then (decision 0013). */
function batched(out: LineSink, shown: (line: string) => string = (line) => line) {
  let pending: Array<string | PendingAccess> = [];
  let size = 0;
  function add(entry: string | PendingAccess, chars: number) {
    pending.push(entry);
    size += chars;
    if (size >= BATCH_CHARS) release();
  }
  function release() {
    if (pending.length === 0) return;
    const entries = pending;
    pending = [];
    size = 0;
    let at = 0;
    let time = "";
    const text = entries.map((entry) => {
      if (typeof entry === "string") return shown(entry);
      if (entry.at !== at) {
        at = entry.at;
        time = new Date(at).toISOString();
      }
      return shown(accessText(entry.level, entry.line, time));
    });
    out.write(text.join(""));
  }
  return {
    write: (line: string) => add(line, line.length),
    access: (level: PendingAccess["level"], line: AccessLine) =>
      add({ level, line, at: Date.now() }, ACCESS_LINE_CHARS),
    release,
  };
}

/** pino's options for lines shaped `{"level":"info","time":"<ISO>",…fields,"msg":"…"}`. */
function options(level: LogLevel): pino.LoggerOptions {
  return {
    level,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    serializers: { err: pino.stdSerializers.errWithCause },
    hooks: {
      // A value that throws when read (a getter, a toJSON) must not cost the line, nor throw
      // inside the code that logs a fault: the line is written with a field saying so instead.
      logMethod(args, method) {
        try {
          method.apply(this, args);
        } catch (error) {
          const reason = error instanceof Error ? `${error.name}: ${error.message}` : "unknown";
          const message = typeof args[0] === "string" ? args[0] : args[1];
          method.call(this, { logFieldsUnwritable: reason }, message);
        }
      },
    },
  };
}

/** JSON lines on stdout (buffered; `flush` before exit), or pino-pretty's lines, loaded only then. */
export async function createLogger({ level, format, destination }: LoggerOptions) {
  const stdout = destination ? undefined : pino.destination({ dest: 1, sync: false, minLength: 4096 });
  let pretty: ((line: string) => string) | undefined;
  if (format === "pretty" && stdout) {
    const { prettyFactory } = await import("pino-pretty");
    pretty = prettyFactory({ translateTime: "SYS:HH:MM:ss.l", colorize: process.stdout.isTTY });
  }
  const lines = stdout && batched(stdout, pretty);
  if (stdout && lines) {
    setInterval(() => {
      lines.release();
      stdout.flush();
    }, FLUSH_EVERY_MS).unref();
  }
  const stream = destination ?? (lines as LineSink);
  const logger = pino(options(level), stream);
  const infoOn = logger.isLevelEnabled("info");
  const errorOn = logger.isLevelEnabled("error");
  const access = (line: AccessLine) => {
    const failed = line.status >= 500;
    if (!(failed ? errorOn : infoOn)) return;
    const level = failed ? "error" : "info";
    if (lines) lines.access(level, line);
    else stream.write(accessText(level, line, new Date().toISOString()));
  };
  const flush = async () => {
    if (!stdout) return;
    lines?.release();
    const written = new Promise<void>((resolve) => stdout.flush(() => resolve()));
    await Promise.race([written, Bun.sleep(FLUSH_WAIT_MS)]);
  };
  return { logger, access, flush };
}

/** Fault lines carry the failed request's id; callers pass faults through `faultDetail` first. */
export function faultLog(logger: pino.Logger, notes: RequestNotes) {
  return (message: string, detail: unknown, request?: Request) =>
    logger.error({ reqId: request && notes.get(request)?.id, err: detail }, message);
}

/** Start, drain and stop lines show even at LOG_LEVEL=warn (supervisors wait for them); "silent" hides them. */
export function lifecycleLogger(logger: pino.Logger): pino.Logger {
  const quieterThanInfo = !logger.isLevelEnabled("info") && logger.level !== "silent";
  return quieterThanInfo ? logger.child({}, { level: "info" }) : logger;
}
