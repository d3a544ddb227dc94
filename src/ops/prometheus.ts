/** The Prometheus text format (0.0.4), and the webhook families written in it. */

export const escapeLabel = (value: string) => value.replace(/[\\"\n]/g, (c) => (c === "\n" ? "\\n" : `\\${c}`));

export function family(name: string, type: string, help: string, samples: string[]): string {
  return `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${samples.join("")}`;
}

export const sample = (name: string, labels: string, value: number) =>
  `${name}${labels ? `{${labels}}` : ""} ${Number.isFinite(value) ? value : 0}\n`;

// A webhook attempt: from a receiver on the same network to one timed out at 10 s.
const ATTEMPT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** What became of one webhook attempt. */
export type AttemptResult = "delivered" | "retried" | "failed";

/** Webhook deliveries as this instance made them, and the outbox's pending count. */
export function webhookFamilies() {
  const attempts: Record<AttemptResult, number> = { delivered: 0, retried: 0, failed: 0 };
  const perBucket = new Uint32Array(ATTEMPT_BUCKETS.length + 1);
  let count = 0;
  let sum = 0;
  let pending = 0;
  return {
    /** An attempt made and recorded, how long it took, and what it made of its delivery. */
    attempt(result: AttemptResult, seconds: number) {
      attempts[result]++;
      count++;
      sum += seconds;
      let bucket = 0;
      while (bucket < ATTEMPT_BUCKETS.length && seconds > (ATTEMPT_BUCKETS[bucket] as number)) bucket++;
      perBucket[bucket] = (perBucket[bucket] ?? 0) + 1;
    },
    /** Read from the database by the dispatcher every few seconds, never on the scrape. */
    setPending(value: number) {
      pending = value;
    },
    render(): string[] {
      const histogram: string[] = [];
      let cumulative = 0;
      ATTEMPT_BUCKETS.forEach((bound, i) => {
        cumulative += perBucket[i] ?? 0;
        histogram.push(sample("plant_store_webhook_attempt_duration_seconds_bucket", `le="${bound}"`, cumulative));
      });
      histogram.push(sample("plant_store_webhook_attempt_duration_seconds_bucket", 'le="+Inf"', count));
      histogram.push(sample("plant_store_webhook_attempt_duration_seconds_sum", "", sum));
      histogram.push(sample("plant_store_webhook_attempt_duration_seconds_count", "", count));
      return [
        family(
          "plant_store_webhook_deliveries_sent_total",
          "counter",
          "Webhook deliveries a receiver accepted (2xx), made by this instance.",
          [sample("plant_store_webhook_deliveries_sent_total", "", attempts.delivered)],
        ),
        family(
          "plant_store_webhook_deliveries_failed_total",
          "counter",
          "Webhook deliveries given up by this instance: retries exhausted, or the endpoint answered 410.",
          [sample("plant_store_webhook_deliveries_failed_total", "", attempts.failed)],
        ),
        family(
          "plant_store_webhook_attempts_total",
          "counter",
          "Webhook attempts this instance made, by what became of the delivery.",
          [
            sample("plant_store_webhook_attempts_total", 'result="delivered"', attempts.delivered),
            sample("plant_store_webhook_attempts_total", 'result="retried"', attempts.retried),
            sample("plant_store_webhook_attempts_total", 'result="failed"', attempts.failed),
          ],
        ),
        family(
          "plant_store_webhook_attempt_duration_seconds",
          "histogram",
          "Time from starting a webhook attempt (address check included) to its answer or failure.",
          histogram,
        ),
        family(
          "plant_store_webhook_deliveries_pending",
          "gauge",
          "Webhook deliveries still to be made, over every instance (read from the database every few seconds).",
          [sample("plant_store_webhook_deliveries_pending", "", pending)],
        ),
      ];
    },
  };
}
