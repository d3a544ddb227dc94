/**
 * `bun bench/webhook-hang.ts [rounds]`: what webhook receivers that never answer cost the API.
 *
 * Starts the service on a temporary SQLite file and a receiver in this process that accepts
 * requests and never answers. Each round measures 1,000 requests one after another (a create,
 * then `GET /plants?limit=20`, alternating) first with no endpoint registered, then while the
 * owner's 10 endpoints each hold their PER_ENDPOINT attempts hanging (the owner's creates in
 * that phase add more deliveries). Prints the median and p99 of both, and the ratio
 * hanging/baseline: the same run, the same machine.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { PER_ENDPOINT } from "../src/webhooks/rules";

const ROOT = resolve(new URL("..", import.meta.url).pathname);
const ROUNDS = Number(process.argv[2] ?? 3);
const REQUESTS = 1000;
const ENDPOINTS = 10;
const HANGING = ENDPOINTS * PER_ENDPOINT;

async function start(path: string) {
  const proc = Bun.spawn(["bun", "--max-http-header-size=16384", join(ROOT, "src/index.ts")], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: "0",
      HOST: "127.0.0.1",
      DATABASE_URL: path,
      RATE_LIMIT_PER_MINUTE: "0",
      LOG_LEVEL: "warn",
      WEBHOOK_ALLOW_PRIVATE: "true",
    },
    stdout: "pipe",
    stderr: "inherit",
  });
  let output = "";
  const reader = proc.stdout.getReader();
  while (!/listening on (http:\/\/\S+)/.test(output)) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`the service exited: ${output}`);
    output += new TextDecoder().decode(value);
  }
  void (async () => {
    while (!(await reader.read()).done) {}
  })();
  const url = /listening on (http:\/\/\S+)/.exec(output)?.[1] as string;
  const token = /^pst_\S+$/m.exec(output)?.[0] as string;
  return { proc, url, token };
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] as number;

async function measure(url: string, headers: Record<string, string>, firstId: number) {
  const times: number[] = [];
  for (let i = 0; i < REQUESTS; i++) {
    const started = performance.now();
    const response =
      i % 2 === 0
        ? await fetch(`${url}/plants`, { method: "POST", headers, body: `{"id":${firstId + i},"name":"p"}` })
        : await fetch(`${url}/plants?limit=20`, { headers });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`a request answered ${response.status}`);
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 0.5), p99: percentile(times, 0.99) };
}

const dir = mkdtempSync(join(tmpdir(), "webhook-hang-"));
let hanging = 0;
const receiver = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 0,
  fetch: () => {
    hanging++;
    return new Promise<Response>(() => {});
  },
});
const service = await start(join(dir, "plants.sqlite"));
try {
  const headers = { authorization: `Bearer ${service.token}`, "content-type": "application/json" };
  let nextId = 1;
  const rows: string[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    // Baseline: no endpoint on the owner's account, and the last round's attempts have timed out (10 s).
    if (round > 1) await Bun.sleep(11_000);
    const baseline = await measure(service.url, headers, nextId);
    nextId += REQUESTS;
    const ids: number[] = [];
    for (let i = 0; i < ENDPOINTS; i++) {
      const registered = await fetch(`${service.url}/webhooks`, {
        method: "POST",
        headers,
        body: JSON.stringify({ url: `http://127.0.0.1:${receiver.port}/hook${i}` }),
      });
      ids.push(((await registered.json()) as { id: number }).id);
    }
    hanging = 0;
    for (let i = 0; i < PER_ENDPOINT; i++) {
      await fetch(`${service.url}/plants`, { method: "POST", headers, body: `{"id":${nextId++},"name":"h"}` });
    }
    while (hanging < HANGING) await Bun.sleep(10);
    const loaded = await measure(service.url, headers, nextId);
    nextId += REQUESTS;
    rows.push(
      `round ${round}: baseline p50 ${baseline.p50.toFixed(3)} ms p99 ${baseline.p99.toFixed(3)} ms; ` +
        `with ${hanging} hanging p50 ${loaded.p50.toFixed(3)} ms p99 ${loaded.p99.toFixed(3)} ms; ` +
        `ratio p50 ${(loaded.p50 / baseline.p50).toFixed(2)}x p99 ${(loaded.p99 / baseline.p99).toFixed(2)}x`,
    );
    console.log(rows.at(-1));
    for (const id of ids) await fetch(`${service.url}/webhooks/${id}`, { method: "DELETE", headers });
  }
} finally {
  service.proc.kill("SIGKILL");
  receiver.stop(true);
  rmSync(dir, { recursive: true, force: true });
}
