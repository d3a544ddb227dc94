import type { StoreFigures } from "../core/stores";
/**
 * Request counts and latency histograms by route pattern and status, requests in flight, the
 * plants this instance created and deleted, the database's size and the process's own
 * figures, in the Prometheus text format (0.0.4).
 *
 * Written here rather than with prom-client: importing prom-client took 35 ms of the 150 ms
 * cold-start budget and recording a request through it about 0.7 µs; this records one in a
 * few array operations. tests/ops.test.ts reads the output with the Prometheus project's own
 * parser.
 */

/**
 * Read from the store at scrape time. Only figures whose cost does not grow with the store
 * belong here: counting the plants made each scrape take 3.6 ms at 1,000,000 plants, and 8
 * scrapers took another user's reads from 0.1 to 29 ms (`bun bench/scrape.ts <checkout of
 * a79338d>`).
 */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
// From a fast read (~50 µs) to a request stuck behind a slow disk.
const BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5];

interface Series {
  /** `method="GET",route="/plants",status="200"` */
  labels: string;
  count: number;
  sum: number;
  /** Requests per bucket, not cumulative; the last slot is +Inf. */
  perBucket: Uint32Array;
}

const escapeLabel = (value: string) => value.replace(/[\\"\n]/g, (c) => (c === "\n" ? "\\n" : `\\${c}`));

function family(name: string, type: string, help: string, samples: string[]): string {
  return `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${samples.join("")}`;
}

const sample = (name: string, labels: string, value: number) =>
  `${name}${labels ? `{${labels}}` : ""} ${Number.isFinite(value) ? value : 0}\n`;

// A webhook attempt: from a receiver on the same network to one timed out at 10 s.
const ATTEMPT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** What became of one webhook attempt. */
export type AttemptResult = "delivered" | "retried" | "failed";

/** Webhook deliveries as this instance made them, and the outbox's pending count. */
function webhookFamilies() {
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

/** The process's own figures, named as Prometheus client libraries name them. */
function processFamilies(startedAt: number): string[] {
  const cpu = process.cpuUsage();
  const memory = process.memoryUsage();
  return [
    family("process_cpu_user_seconds_total", "counter", "User CPU time spent, in seconds.", [
      sample("process_cpu_user_seconds_total", "", cpu.user / 1e6),
    ]),
    family("process_cpu_system_seconds_total", "counter", "System CPU time spent, in seconds.", [
      sample("process_cpu_system_seconds_total", "", cpu.system / 1e6),
    ]),
    family("process_resident_memory_bytes", "gauge", "Resident memory size, in bytes.", [
      sample("process_resident_memory_bytes", "", memory.rss),
    ]),
    family("process_heap_bytes", "gauge", "JavaScript heap in use, in bytes.", [
      sample("process_heap_bytes", "", memory.heapUsed),
    ]),
    family("process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch, in seconds.", [
      sample("process_start_time_seconds", "", startedAt),
    ]),
  ];
}

export function createMetrics(store: StoreFigures) {
  const startedAt = Math.floor(Date.now() / 1000 - process.uptime());
  const series = new Map<string, Series>();
  let inFlight = 0;
  let plantsCreated = 0;
  let plantsDeleted = 0;
  const webhooks = webhookFamilies();

  function render(): string {
    const all = [...series.values()];
    const counts = all.map((s) => sample("http_requests_total", s.labels, s.count));
    const histogram: string[] = [];
    for (const s of all) {
      let cumulative = 0;
      BUCKETS.forEach((bound, i) => {
        cumulative += s.perBucket[i] ?? 0;
        histogram.push(sample("http_request_duration_seconds_bucket", `${s.labels},le="${bound}"`, cumulative));
      });
      histogram.push(sample("http_request_duration_seconds_bucket", `${s.labels},le="+Inf"`, s.count));
      histogram.push(sample("http_request_duration_seconds_sum", s.labels, s.sum));
      histogram.push(sample("http_request_duration_seconds_count", s.labels, s.count));
    }
    return [
      family("http_requests_total", "counter", "Requests answered, by method, route pattern and status.", counts),
      family(
        "http_request_duration_seconds",
        "histogram",
        "Time from receiving a request to having its response, by method, route pattern and status.",
        histogram,
      ),
      family("http_requests_in_flight", "gauge", "Requests received and not yet answered.", [
        sample("http_requests_in_flight", "", inFlight),
      ]),
      family("plant_store_plants_created_total", "counter", "Plants this instance created (acknowledged).", [
        sample("plant_store_plants_created_total", "", plantsCreated),
      ]),
      family("plant_store_plants_deleted_total", "counter", "Plants this instance deleted (acknowledged).", [
        sample("plant_store_plants_deleted_total", "", plantsDeleted),
      ]),
      family(
        "plant_store_database_bytes",
        "gauge",
        "Size of the database: SQLite pages in use times page size, or PostgreSQL pg_database_size (read at most every 10 s).",
        [sample("plant_store_database_bytes", "", store.databaseBytes())],
      ),
      ...webhooks.render(),
      ...processFamilies(startedAt),
    ].join("");
  }

  return {
    render,
    /** Called once the create is durable and answered with 200. */
    plantCreated() {
      plantsCreated++;
    },
    /** Called once the delete is durable and answered with 204. */
    plantDeleted() {
      plantsDeleted++;
    },
    webhookAttempt: webhooks.attempt,
    setWebhooksPending: webhooks.setPending,
    requestStarted() {
      inFlight++;
    },
    requestFinished(method: string, route: string, status: number, seconds: number) {
      inFlight--;
      // Methods outside the known set share one label: a client cannot grow the series count.
      const methodLabel = KNOWN_METHODS.has(method) ? method : "other";
      const key = `${methodLabel} ${route} ${status}`;
      let s = series.get(key);
      if (!s) {
        const labels = `method="${methodLabel}",route="${escapeLabel(route)}",status="${status}"`;
        s = { labels, count: 0, sum: 0, perBucket: new Uint32Array(BUCKETS.length + 1) };
        series.set(key, s);
      }
      s.count++;
      s.sum += seconds;
      let bucket = 0;
      while (bucket < BUCKETS.length && seconds > (BUCKETS[bucket] as number)) bucket++;
      s.perBucket[bucket] = (s.perBucket[bucket] ?? 0) + 1;
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
