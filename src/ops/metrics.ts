import type { StoreStatus } from "../core/stores";
import { counter, escapeLabel, family, gauge, histogram, sample, webhookFamilies } from "./prometheus";

// Why not prom-client: docs/architecture.md ("Metrics without prom-client"). Only store figures
// whose cost does not grow with the store are read at scrape time.
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
// From a fast read (~50 µs) to a request stuck behind a slow disk.
const BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5];

/** The process's own figures, named as Prometheus client libraries name them. */
function processFamilies(startedAt: number): string[] {
  const cpu = process.cpuUsage();
  const memory = process.memoryUsage();
  return [
    counter("process_cpu_user_seconds_total", "User CPU time spent, in seconds.", cpu.user / 1e6),
    counter("process_cpu_system_seconds_total", "System CPU time spent, in seconds.", cpu.system / 1e6),
    gauge("process_resident_memory_bytes", "Resident memory size, in bytes.", memory.rss),
    gauge("process_heap_bytes", "JavaScript heap in use, in bytes.", memory.heapUsed),
    gauge("process_start_time_seconds", "Start time of the process since the Unix epoch, in seconds.", startedAt),
  ];
}

export function createMetrics(store: StoreStatus["figures"]) {
  const startedAt = Math.floor(Date.now() / 1000 - process.uptime());
  /** By `method="GET",route="/plants",status="200"` labels. */
  const series = new Map<string, { labels: string; durations: ReturnType<typeof histogram> }>();
  let inFlight = 0;
  let plantsCreated = 0;
  let plantsDeleted = 0;
  const webhooks = webhookFamilies();

  function render(): string {
    const all = [...series.values()];
    const name = "http_request_duration_seconds";
    return [
      family(
        "http_requests_total",
        "counter",
        "Requests answered, by method, route pattern and status.",
        all.map((s) => sample("http_requests_total", s.labels, s.durations.count)),
      ),
      family(
        name,
        "histogram",
        "Time from receiving a request to having its response, by method, route pattern and status.",
        all.flatMap((s) => s.durations.samples(name, s.labels)),
      ),
      gauge("http_requests_in_flight", "Requests received and not yet answered.", inFlight),
      counter("plant_store_plants_created_total", "Plants this instance created (acknowledged).", plantsCreated),
      counter("plant_store_plants_deleted_total", "Plants this instance deleted (acknowledged).", plantsDeleted),
      gauge(
        "plant_store_database_bytes",
        "Size of the database: SQLite pages in use times page size, or PostgreSQL pg_database_size (read at most every 10 s).",
        store.databaseBytes(),
      ),
      ...webhooks.render(),
      ...processFamilies(startedAt),
    ].join("");
  }

  return {
    render,
    /** Once the create is durable and answered. */
    plantCreated() {
      plantsCreated++;
    },
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
        s = { labels, durations: histogram(BUCKETS) };
        series.set(key, s);
      }
      s.durations.observe(seconds);
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
