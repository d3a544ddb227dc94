const ERROR_LENGTH_LIMIT = 300;

export class TimedOut extends Error {
  constructor(ms: number) {
    super(`timed out after ${ms} ms`);
  }
}

/** Settles with `promise`, or rejects with the signal's reason when it fires first. */
export function raceSignal<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const abort = () => reject(signal.reason);
    if (signal.aborted) return abort();
    signal.addEventListener("abort", abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", abort));
  });
}

const PLAIN_REASONS: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset by the receiver",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ENOTFOUND: "no such host",
};

/** One line for the attempt log; control characters go, as PostgreSQL's text cannot hold U+0000. */
export function reasonOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && PLAIN_REASONS[code]) return PLAIN_REASONS[code];
  const message = error instanceof Error ? error.message : String(error);
  const line = (typeof code === "string" && !message.includes(code) ? `${message} (${code})` : message)
    .replace(/[\s\p{Cc}]+/gu, " ")
    .trim();
  return line.length > ERROR_LENGTH_LIMIT ? `${line.slice(0, ERROR_LENGTH_LIMIT - 1)}…` : line;
}
