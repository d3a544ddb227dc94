/** The Prometheus text format (0.0.4), and the webhook families written in it. */

export const escapeLabel = (value: string) => value.replace(/[\\"\n]/g, (c) => (c === "\n" ? "\\n" : `\\${c}`));

export function family(name: string, type: string, help: string, samples: string[]): string {
  return `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${samples.join("")}`;
}

export const sample = (name: string, labels: string, value: number) =>
  `${name}${labels ? `{${labels}}` : ""} ${Number.isFinite(value) ? value : 0}\n`;

/** A family of one unlabelled sample. */
const single = (type: string) => (name: string, help: string, value: number) =>
  family(name, type, help, [sample(name, "", value)]);
export const counter = single("counter");
export const gauge = single("gauge");

/** Observations counted per bucket (not cumulative; the last slot is +Inf), written cumulatively. */
export function histogram(bounds: readonly number[]) {
  const perBucket = new Uint32Array(bounds.length + 1);
  let sum = 0;
  const self = {
    count: 0,
    observe(seconds: number) {
      self.count++;
      sum += seconds;
      let bucket = 0;
      while (bucket < bounds.length && seconds > (bounds[bucket] as number)) bucket++;
      perBucket[bucket] = (perBucket[bucket] ?? 0) + 1;
    },
    samples(name: string, labels: string): string[] {
      const le = labels ? `${labels},le=` : "le=";
      let cumulative = 0;
      const lines = bounds.map((bound, i) => {
        cumulative += perBucket[i] ?? 0;
        return sample(`${name}_bucket`, `${le}"${bound}"`, cumulative);
      });
      lines.push(sample(`${name}_bucket`, `${le}"+Inf"`, self.count));
      lines.push(sample(`${name}_sum`, labels, sum), sample(`${name}_count`, labels, self.count));
      return lines;
    },
  };
  return self;
}

// A webhook attempt: from a receiver on the same network to one timed out at 10 s.
const ATTEMPT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export type AttemptResult = "delivered" | "retried" | "failed";

/** Webhook deliveries as this instance made them, and the outbox's pending count. */
export function webhookFamilies() {
  const attempts: Record<AttemptResult, number> = { delivered: 0, retried: 0, failed: 0 };
  const durations = histogram(ATTEMPT_BUCKETS);
  let pending = 0;
  return {
    attempt(result: AttemptResult, seconds: number) {
      attempts[result]++;
      durations.observe(seconds);
    },
    /** Read from the database by the dispatcher every few seconds, never on the scrape. */
    setPending(value: number) {
      pending = value;
    },
    render(): string[] {
      return [
        counter(
          "plant_store_webhook_deliveries_sent_total",
          "Webhook deliveries a receiver accepted (2xx), made by this instance.",
          attempts.delivered,
        ),
        counter(
          "plant_store_webhook_deliveries_failed_total",
          "Webhook deliveries given up by this instance: retries exhausted, or the endpoint answered 410.",
          attempts.failed,
        ),
        family(
          "plant_store_webhook_attempts_total",
          "counter",
          "Webhook attempts this instance made, by what became of the delivery.",
          (["delivered", "retried", "failed"] as const).map((result) =>
            sample("plant_store_webhook_attempts_total", `result="${result}"`, attempts[result]),
          ),
        ),
        family(
          "plant_store_webhook_attempt_duration_seconds",
          "histogram",
          "Time from starting a webhook attempt (address check included) to its answer or failure.",
          durations.samples("plant_store_webhook_attempt_duration_seconds", ""),
        ),
        gauge(
          "plant_store_webhook_deliveries_pending",
          "Webhook deliveries still to be made, over every instance (read from the database every few seconds).",
          pending,
        ),
      ];
    },
  };
}
