import type { StoreFigures } from "../core/stores";
import { escapeLabel, family, sample, webhookFamilies } from "./prometheus";

export type { AttemptResult } from "./prometheus";
/*
 * Request counts and latency histograms by route pattern and status, requests in flight, the
 * plants this instance created and deleted, the database's size and the process's own figures,
 * in the Prometheus text format (0.0.4); why not prom-client: docs/decisions/0003-hand-written-logger-and-metrics.md.
 * Only store figures whose cost does not grow with the store are read at scrape time.
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
