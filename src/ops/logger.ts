import pino from "pino";
import type { LogFormat, LogLevel } from "../config";
import { faultDetail } from "../http/errors";
import type { RequestNotes } from "./request-id";

export type Logger = pino.Logger;

export interface LoggerOptions {
  level: LogLevel;
  format: LogFormat;
  /** Where the lines go instead of stdout (tests). */
  destination?: pino.DestinationStream;
}

/**
 * JSON lines on stdout. Written asynchronously: a request never waits for the terminal or
 * the pipe, and lines written together leave in one write. `flush` empties the buffer before
 * the process exits.
 */
export async function createLogger({ level, format, destination }: LoggerOptions) {
  const options: pino.LoggerOptions = {
    level,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  if (destination) return { logger: pino(options, destination), flush: () => {} };
  if (format === "pretty") {
    const { default: pretty } = await import("pino-pretty");
    const stream = pretty({ sync: true, translateTime: "SYS:HH:MM:ss.l", colorize: process.stdout.isTTY });
    return { logger: pino(options, stream), flush: () => {} };
  }
  const stdout = pino.destination({ dest: 1, sync: false });
  return { logger: pino(options, stdout), flush: () => stdout.flushSync() };
}

/** The app's fault log on top of the logger: the line carries the id of the request that failed. */
export function faultLog(logger: Logger, notes: RequestNotes) {
  return (message: string, detail: unknown, request?: Request) =>
    logger.error({ reqId: request && notes.get(request)?.id, err: faultDetail(detail) }, message);
}
