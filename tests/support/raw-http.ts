import { connect, type Socket } from "node:net";
import { until } from "./until";

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A bare TCP connection to the server, for what fetch cannot do: hold a request half-sent,
 * send bytes that are not valid HTTP, watch the server close the connection.
 */
export async function openRaw(url: string) {
  const { hostname, port } = new URL(url);
  const socket: Socket = await new Promise((resolve, reject) => {
    const s = connect({ host: hostname, port: Number(port) }, () => resolve(s));
    s.once("error", reject);
  });
  let received = "";
  let closed = false;
  const closedPromise = new Promise<void>((resolve) => {
    socket.on("close", () => {
      closed = true;
      resolve();
    });
  });
  socket.on("data", (chunk) => {
    received += chunk.toString("latin1");
  });
  socket.on("error", () => {});

  /** Resolves once `predicate` holds for what has been received, or rejects after `ms`. */
  const seen = (predicate: () => boolean, ms: number, what: string) =>
    until(predicate, { timeoutMs: ms, intervalMs: 5, what }).then(() => {});

  return {
    write: (data: string | Uint8Array) =>
      new Promise<void>((resolve, reject) => socket.write(data, (error) => (error ? reject(error) : resolve()))),
    /** The first complete response on the connection (Content-Length framed). */
    async response(ms = 5000): Promise<RawResponse> {
      const complete = () => {
        const end = received.indexOf("\r\n\r\n");
        if (end < 0) return closed;
        const length = /\r\ncontent-length: *(\d+)/i.exec(received.slice(0, end))?.[1];
        return closed || received.length >= end + 4 + Number(length ?? 0);
      };
      await seen(complete, ms, "a response");
      const end = received.indexOf("\r\n\r\n");
      if (end < 0) throw new Error(`connection closed without a response: ${JSON.stringify(received)}`);
      const [statusLine = "", ...lines] = received.slice(0, end).split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(":");
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      return { status: Number(statusLine.split(" ")[1]), headers, body: received.slice(end + 4) };
    },
    received: () => received,
    closed: (ms: number) => seen(() => closed, ms, "the server to close the connection"),
    /** Resolves once the connection is closed or `count` status lines have arrived. */
    closedOrAnswered: (count: number, ms: number) =>
      seen(
        () => closed || (received.match(/^HTTP\/1\.1 \d{3}/gm)?.length ?? 0) >= count,
        ms,
        `${count} responses or the connection closed`,
      ),
    isClosed: () => closed,
    end: () => {
      socket.destroy();
      return closedPromise;
    },
  };
}

/**
 * A response as it came off the wire, its body decoded whether framed by Content-Length or
 * chunked; undefined unless the whole of it arrived (a cut-off body is not an answer).
 */
export function wholeResponse(received: string): RawResponse | undefined {
  const end = received.indexOf("\r\n\r\n");
  if (end < 0) return undefined;
  const [statusLine = "", ...lines] = received.slice(0, end).split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const status = Number(statusLine.split(" ")[1]);
  const rest = received.slice(end + 4);
  if (headers["transfer-encoding"] !== "chunked") {
    const length = Number(headers["content-length"] ?? Number.NaN);
    return rest.length >= length ? { status, headers, body: rest.slice(0, length) } : undefined;
  }
  let body = "";
  for (let at = 0; ; ) {
    const lineEnd = rest.indexOf("\r\n", at);
    if (lineEnd < 0) return undefined;
    const size = Number.parseInt(rest.slice(at, lineEnd), 16);
    if (Number.isNaN(size) || rest.length < lineEnd + 2 + size + 2) return undefined;
    if (size === 0) return { status, headers, body };
    body += rest.slice(lineEnd + 2, lineEnd + 2 + size);
    at = lineEnd + 2 + size + 2;
  }
}
