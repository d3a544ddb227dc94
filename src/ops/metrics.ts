import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** Figures read from the store at scrape time, not kept up to date on every write. */
export interface StoreFigures {
  plants(): number;
  users(): number;
  databaseBytes(): number;
}

const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
// From a fast read (~50 µs) to a request stuck behind a slow disk.
const DURATION_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5];

/** Request counts and latencies by route pattern and status, and what the store holds. */
export function createMetrics(store: StoreFigures) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const labelNames = ["method", "route", "status"] as const;
  const requests = new Counter({
    name: "http_requests_total",
    help: "Requests answered, by method, route pattern and status.",
    labelNames,
    registers: [registry],
  });
  const durations = new Histogram({
    name: "http_request_duration_seconds",
    help: "Time from receiving a request to having its response, by method, route pattern and status.",
    labelNames,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  let inFlight = 0;
  new Gauge({
    name: "http_requests_in_flight",
    help: "Requests received and not yet answered.",
    registers: [registry],
    collect() {
      this.set(inFlight);
    },
  });
  const storeGauge = (name: string, help: string, read: () => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read());
      },
    });
  storeGauge("plant_store_plants", "Plants stored, all users together.", store.plants);
  storeGauge("plant_store_users", "Users known to the store.", store.users);
  storeGauge(
    "plant_store_database_bytes",
    "Size of the SQLite database (pages in use times page size).",
    store.databaseBytes,
  );

  // Labelled children looked up once per combination: prom-client hashes the labels otherwise.
  type Series = { count: ReturnType<typeof requests.labels>; duration: ReturnType<typeof durations.labels> };
  const series = new Map<string, Series>();

  return {
    registry,
    requestStarted() {
      inFlight++;
    },
    requestFinished(method: string, route: string, status: number, seconds: number) {
      inFlight--;
      const methodLabel = KNOWN_METHODS.has(method) ? method : "other";
      const key = `${methodLabel} ${route} ${status}`;
      let child = series.get(key);
      if (!child) {
        const labels = { method: methodLabel, route, status: String(status) };
        child = { count: requests.labels(labels), duration: durations.labels(labels) };
        series.set(key, child);
      }
      child.count.inc();
      child.duration.observe(seconds);
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
