import type { IncomingMessage } from "node:http";
import type { LookupFunction } from "node:net";
import { raceSignal, reasonOf, TimedOut } from "./failure";
import { bare, checkedAddress, type Resolver, type Target } from "./resolve";
import { ATTEMPT_TIMEOUT_MS, CONNECT_TIMEOUT_MS } from "./rules";

export { AddressRefused, checkedAddress, type Resolver, systemResolver, type Target } from "./resolve";

/** Only the status counts; reading a little of the body lets the receiver finish writing. */
const BODY_READ_LIMIT = 64 * 1024;
const RETRY_AFTER_CAP_MS = 24 * 60 * 60 * 1000;

/** The checked address, so the socket cannot reach anything a fresh lookup would say. */
function pinnedTo(target: Target): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [target]);
    else callback(null, target.address, target.family);
  };
}

/** Retry-After as delta-seconds or an HTTP-date (all three RFC 9110 forms start with a day name). */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else if (/^[A-Za-z]{3,9},? /.test(text) && Number.isFinite(Date.parse(text)))
    ms = Math.max(0, Date.parse(text) - now);
  else return undefined;
  return Math.min(ms, RETRY_AFTER_CAP_MS);
}

export interface AttemptResult {
  status?: number;
  durationMs: number;
  error?: string;
  retryAfterMs?: number;
}

export interface AttemptInput {
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs?: number;
  connectTimeoutMs?: number;
  allowPrivate: boolean;
  resolve?: Resolver;
  /** An extra trusted CA (tests' self-signed receivers). */
  ca?: string | Buffer;
}

interface Answer {
  status: number;
  retryAfter?: string;
}

/** Never throws; timeoutMs bounds the whole attempt, DNS included. */
export async function sendAttempt(input: AttemptInput): Promise<AttemptResult> {
  const started = performance.now();
  const timeoutMs = input.timeoutMs ?? ATTEMPT_TIMEOUT_MS;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new TimedOut(timeoutMs)), timeoutMs);
  const durationMs = () => Math.round(performance.now() - started);
  try {
    const url = parse(input.url);
    const target = await raceSignal(checkedAddress(url, input), deadline.signal);
    const client = await clientFor(url);
    const answer = await exchange(client, url, target, input, deadline.signal);
    const retry = retryAfterMs(answer.retryAfter);
    return { status: answer.status, durationMs: durationMs(), ...(retry === undefined ? {} : { retryAfterMs: retry }) };
  } catch (error) {
    return { durationMs: durationMs(), error: reasonOf(error) };
  } finally {
    clearTimeout(timer);
  }
}

function parse(text: string): URL {
  const url = URL.parse(text);
  if (!url) throw new Error("url: not an absolute URL");
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("url: the scheme must be http or https");
  return url;
}

type Client = Pick<typeof import("node:http"), "request" | "Agent">;
type Agent = InstanceType<Client["Agent"]>;

/** Loaded with the first attempt: most starts have no delivery due, and a start would pay for them. */
const clientFor = (url: URL): Promise<Client> =>
  url.protocol === "https:" ? import("node:https") : import("node:http");

/** Kept-alive connections, one pool per checked address (docs/decisions/0012-webhook-throughput.md). */
const POOLS_KEPT = 256;
const IDLE_SOCKET_MS = 4_000;
const pools = new Map<string, Agent>();

/**
 * A pool whose sockets all go to `target`: the address this attempt just checked, so a reused
 * socket never skips the check. The least recently used pool past POOLS_KEPT is closed.
 */
function poolFor(client: Client, url: URL, target: Target): Agent {
  const key = `${url.protocol}//${url.host}@${target.address}`;
  let pool = pools.get(key);
  if (pool) pools.delete(key);
  else pool = new client.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS });
  pools.set(key, pool);
  if (pools.size > POOLS_KEPT) {
    const [oldest, evicted] = pools.entries().next().value as [string, Agent];
    pools.delete(oldest);
    evicted.destroy();
  }
  return pool;
}

/** No redirect (node:http follows none). */
function exchange(
  client: Client,
  url: URL,
  target: Target,
  input: AttemptInput,
  deadline: AbortSignal,
): Promise<Answer> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.headers)) {
    if (!/^(host|content-length|transfer-encoding)$/i.test(name)) headers[name] = value;
  }
  headers.host = url.host;
  headers["content-length"] = String(Buffer.byteLength(input.body));
  const secure = url.protocol === "https:";
  return new Promise((resolve, reject) => {
    const request = client.request({
      host: bare(url.hostname),
      port: Number(url.port) || (secure ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      method: "POST",
      headers,
      agent: poolFor(client, url, target),
      lookup: pinnedTo(target),
      ...(secure && input.ca !== undefined ? { ca: input.ca } : {}),
    });
    let answer: Answer | undefined;
    const connectMs = input.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
    const connecting = setTimeout(() => settle(new Error(`no connection within ${connectMs} ms`)), connectMs);
    // A socket whose answer was read in full goes back to its pool; any other is closed.
    const settle = (error?: unknown, whole = false) => {
      clearTimeout(connecting);
      deadline.removeEventListener("abort", onDeadline);
      if (!whole) request.destroy();
      if (answer) resolve(answer);
      else reject(error);
    };
    // Once the status is in, running out of time while reading the body still counts as an answer.
    const onDeadline = () => settle(deadline.reason);
    if (deadline.aborted) return onDeadline();
    deadline.addEventListener("abort", onDeadline, { once: true });
    request.on("error", settle);
    request.on("socket", (socket) => {
      if (socket.connecting) socket.once("connect", () => clearTimeout(connecting));
      else clearTimeout(connecting);
    });
    request.on("response", (response: IncomingMessage) => {
      const retryAfter = response.headers["retry-after"];
      answer = { status: response.statusCode ?? 0, ...(retryAfter === undefined ? {} : { retryAfter }) };
      drain(response, (whole) => settle(undefined, whole));
    });
    request.end(input.body);
  });
}

/** `done(true)` once the whole body was read (the socket may be reused), `done(false)` when cut short. */
function drain(response: IncomingMessage, done: (whole: boolean) => void) {
  let read = 0;
  let finished = false;
  const finish = (whole: boolean) => {
    if (finished) return;
    finished = true;
    if (!whole) response.destroy();
    done(whole);
  };
  response.on("data", (chunk: Buffer) => {
    read += chunk.length;
    if (read >= BODY_READ_LIMIT) finish(false);
  });
  response.on("end", () => finish(true));
  response.on("close", () => finish(false));
  response.on("error", () => finish(false));
}
