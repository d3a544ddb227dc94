import type { RunningServer } from "./process";
import { openRaw } from "./raw-http";
import { until } from "./until";

/** Requests the server is handling now, from its own metrics (started with METRICS_PORT=0). */
export async function requestsInFlight(server: RunningServer): Promise<number> {
  const metricsUrl = /metrics at (http:\/\/\S+\/metrics)/.exec(server.startupOutput)?.[1];
  if (!metricsUrl) throw new Error("the server was started without METRICS_PORT");
  const text = await (await fetch(metricsUrl)).text();
  return Number(/^http_requests_in_flight (\d+)$/m.exec(text)?.[1] ?? Number.NaN);
}

/** Starts a POST whose body is only half sent, and returns once the server is handling it. */
export async function holdRequestInFlight(server: RunningServer, token: string) {
  const raw = await openRaw(server.url);
  await raw.write(
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
      "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
      '9\r\n{"id":42,\r\n',
  );
  await until(() => requestsInFlight(server), {
    holds: (n) => n >= 1,
    intervalMs: 5,
    what: `the held request to be in flight (received ${JSON.stringify(raw.received())})`,
  });
  return raw;
}
