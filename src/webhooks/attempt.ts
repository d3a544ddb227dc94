import type { ClaimedDelivery, WebhookStore } from "../core/stores";
import type { AttemptResult as MetricResult } from "../ops/metrics";
import { outcomeOf } from "./rules";
import { type Resolver, sendAttempt } from "./send";
import { signedHeaders } from "./signing";

export interface AttemptMetrics {
  webhookAttempt(result: MetricResult, seconds: number): void;
}

export interface AttemptOptions {
  store: WebhookStore;
  retryDelaysMs: readonly number[];
  allowPrivate: boolean;
  metrics: AttemptMetrics;
  timeoutMs: number;
  resolve: Resolver | undefined;
  clock: () => number;
  random: () => number;
}

/** Signs, sends and records one attempt; whether it was delivered. Throws only when recording fails. */
export async function attemptDelivery(delivery: ClaimedDelivery, options: AttemptOptions): Promise<boolean> {
  const { store, retryDelaysMs, allowPrivate, metrics, timeoutMs, resolve, clock, random } = options;
  const number = delivery.attempts + 1;
  const at = clock();
  const headers = signedHeaders(delivery.secret, delivery.id, Math.floor(at / 1000), delivery.payload);
  const result = await sendAttempt({
    url: delivery.url,
    body: delivery.payload,
    headers,
    timeoutMs,
    allowPrivate,
    resolve,
  });
  const { outcome, retryInMs } = outcomeOf(result, number, retryDelaysMs, random);
  await store.recordAttempt({
    deliverySeq: delivery.seq,
    attempt: number,
    at,
    statusCode: result.status,
    durationMs: result.durationMs,
    error: result.error,
    outcome,
    retryInMs,
  });
  metrics.webhookAttempt(outcome === "pending" ? "retried" : outcome, result.durationMs / 1000);
  return outcome === "delivered";
}
