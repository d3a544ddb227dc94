/**
 * Webhooks through real `bun src/index.ts` processes: deliveries survive a SIGKILL right after
 * the 200s, and on PostgreSQL two instances on one database send each delivery once.
 */

import { Database } from "bun:sqlite";
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { SQL } from "bun";
import { LEASE_MS, PER_ENDPOINT } from "../../src/webhooks/rules";
import { holdRequestInFlight } from "../support/held-request";
import { ENGINE, onPostgres } from "../support/helpers";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { until } from "../support/until";
import { bootstrapToken, printedToken } from "../support/users";
import { never, startReceiver } from "../support/webhook-receiver";
import { webhookServers } from "../support/webhook-servers";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const tokenOf = bootstrapToken;

const { cleanups, databaseUrl, server } = webhookServers();

const post = (url: string, token: string, path: string, body: string) =>
  fetch(`${url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body,
  });

async function deliveryLog(url: string, token: string, endpoint: number) {
  const response = await fetch(`${url}/webhooks/${endpoint}/deliveries`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return (await response.json()) as Array<{ id: string; status: string; type: string }>;
}

/**
 * The leases of the deliveries claimed and not recorded (if any), checked to run LEASE_MS from
 * their claim, then ended now: what LEASE_MS passing would do, without the wait. The server must be down.
 */
async function endLeasesOf(databaseUrl: string): Promise<void> {
  const leased = "next_attempt_at > {now} AND status = 'pending'";
  if (onPostgres) {
    const sql = new SQL(databaseUrl, { max: 1 });
    try {
      const [{ left }] = (await sql.unsafe(
        `SELECT min(extract(epoch FROM next_attempt_at - now()) * 1000)::float8 AS left FROM webhook_deliveries WHERE ${leased.replace("{now}", "now()")}`,
      )) as [{ left: number | null }];
      if (left !== null) expect(left).toBeGreaterThan(LEASE_MS - 10_000);
      await sql.unsafe(
        `UPDATE webhook_deliveries SET next_attempt_at = now() WHERE ${leased.replace("{now}", "now()")}`,
      );
    } finally {
      await sql.close();
    }
    return;
  }
  const db = new Database(databaseUrl);
  try {
    const now = Date.now();
    const { left } = db
      .query(`SELECT min(next_attempt_at) - ?1 AS left FROM webhook_deliveries WHERE ${leased.replace("{now}", "?1")}`)
      .get(now) as { left: number | null };
    if (left !== null) expect(left).toBeGreaterThan(LEASE_MS - 10_000);
    db.query(`UPDATE webhook_deliveries SET next_attempt_at = ?1 WHERE ${leased.replace("{now}", "?1")}`).run(now);
  } finally {
    db.close();
  }
}

describe(`webhooks across processes (${ENGINE})`, () => {
  /**
   * A server with `endpoints` endpoints on a receiver that hangs until told to answer; `restart`
   * kills the server with SIGKILL, lets the receiver answer, starts it again and waits (30 s at
   * most) until `count` deliveries of each endpoint are delivered. Returns their logs, one after
   * the other, and how long that took.
   */
  async function crashingRun({
    endLeases = false,
    endpoints: endpointCount = 1,
    events = undefined as string[] | undefined,
  } = {}) {
    let answering = false;
    const hook = startReceiver(() => (answering ? new Response("ok") : never()));
    cleanups.push(hook.stop);
    const env = { DATABASE_URL: await databaseUrl() };
    const first = await server(env);
    const token = tokenOf(first);
    const endpoints: number[] = [];
    for (let i = 0; i < endpointCount; i++) {
      const registered = await post(
        first.url,
        token,
        "/webhooks",
        JSON.stringify({ url: hook.url(`/hook${i}`), events }),
      );
      expect(registered.status).toBe(201);
      endpoints.push(((await registered.json()) as { id: number }).id);
    }
    async function restart(count: number) {
      first.kill("SIGKILL");
      await first.exited;
      if (endLeases) await endLeasesOf(env.DATABASE_URL);
      answering = true;
      const restarted = await server(env);
      const startedAt = performance.now();
      const logs = () => Promise.all(endpoints.map((endpoint) => deliveryLog(restarted.url, token, endpoint)));
      const all = await until(logs, {
        holds: (each) => each.every((list) => list.length === count && list.every((d) => d.status === "delivered")),
        timeoutMs: 30_000,
      });
      return { log: all.flat(), seconds: (performance.now() - startedAt) / 1000 };
    }
    return { hook, url: first.url, token, restart };
  }

  // Deliveries the dead process had claimed are leased (LEASE_MS): their leases are ended as the
  // next test checks them, so what this one waits for is the durability of the outbox.
  test("kill -9 right after the 200s: every delivery still arrives after the restart, within 30 s", async () => {
    const run = await crashingRun({ endLeases: true });
    const body = (i: number) => `{"id":${9007199254740993n + BigInt(i)},"name":"p${i}"}`;
    const created = await Promise.all(
      Array.from({ length: 50 }, (_, i) => post(run.url, run.token, "/plants", body(i))),
    );
    expect(created.map((r) => r.status)).toEqual(Array(50).fill(200));
    const { log, seconds } = await run.restart(50);
    expect(seconds).toBeLessThan(30);
    expect(log.map((d) => d.status)).toEqual(Array(50).fill("delivered"));
    // Whatever the dead process had sent hung unanswered: every delivery was answered after the restart.
    const answered = new Set(run.hook.received.slice(-50).map((r) => r.headers["webhook-id"]));
    for (const delivery of log) expect(answered.has(delivery.id)).toBe(true);
    const bodies = new Set(run.hook.received.map((r) => r.body));
    for (let i = 0; i < 50; i++) expect(bodies.has(body(i))).toBe(true);
  }, 60_000);

  test("kill -9 right after the 200s of creates, updates and deletes: every change is delivered after the restart, as its change", async () => {
    const run = await crashingRun({ endLeases: true, events: ["plant.created", "plant.updated", "plant.deleted"] });
    const send = (method: string, path: string, body?: string) =>
      fetch(`${run.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${run.token}`, "content-type": "application/json" },
        body,
      });
    for (let i = 0; i < 10; i++)
      expect((await post(run.url, run.token, "/plants", `{"id":${i},"name":"p${i}"}`)).status).toBe(200);
    for (let i = 0; i < 10; i++)
      expect((await send("PATCH", `/plants/${i}`, `{"name":"renamed ${i}"}`)).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await send("DELETE", `/plants/${i}`)).status).toBe(204);
    const { log, seconds } = await run.restart(25);
    expect(seconds).toBeLessThan(30);
    expect(log.map((d) => d.status)).toEqual(Array(25).fill("delivered"));
    const types = log.map((d) => d.type);
    expect(types).toEqual([
      ...Array(10).fill("plant.created"),
      ...Array(10).fill("plant.updated"),
      ...Array(5).fill("plant.deleted"),
    ]);
    // Each change reached the receiver as itself, every seq once at least.
    const changes = run.hook.received.map((r) => JSON.parse(r.body) as { seq: number; type: string });
    expect(new Set(changes.map((change) => change.seq)).size).toBe(25);
  }, 60_000);

  // The leases are LEASE_MS (20 s) long: checked, then ended in the database while the server is
  // down, as if that long had passed, rather than waited for.
  // Five endpoints of four deliveries each: an endpoint holds at most PER_ENDPOINT attempts at once.
  test("kill -9 while attempts hang: they are made again once their lease ends, within 30 s of the restart", async () => {
    const run = await crashingRun({ endLeases: true, endpoints: 20 / PER_ENDPOINT });
    for (let i = 0; i < PER_ENDPOINT; i++)
      expect((await post(run.url, run.token, "/plants", `{"id":${i},"name":"p"}`)).status).toBe(200);
    await until(async () => run.hook.hanging(), { holds: (n) => n === 20, timeoutMs: 10_000 });
    expect(run.hook.hanging()).toBe(20);
    const { log, seconds } = await run.restart(PER_ENDPOINT);
    expect(seconds).toBeLessThan(30);
    expect(log.map((d) => d.status)).toEqual(Array(20).fill("delivered"));
    const ids = run.hook.received.map((r) => r.headers["webhook-id"] as string);
    // Each was sent twice: once to the hang, once after the restart.
    expect(ids).toHaveLength(40);
    expect(new Set(ids)).toEqual(new Set(log.map((d) => d.id)));
  }, 60_000);

  test("SIGTERM while an attempt hangs and a request is held: deliveries still go out while requests drain, one SHUTDOWN_TIMEOUT_MS for both, exit 0", async () => {
    // The first delivery hangs; any later one is answered.
    let attempts = 0;
    const hook = startReceiver(() => (attempts++ === 0 ? never() : new Response("ok")));
    cleanups.push(hook.stop);
    const timeoutMs = 3_000;
    const started = await server({
      DATABASE_URL: await databaseUrl(),
      SHUTDOWN_TIMEOUT_MS: String(timeoutMs),
      METRICS_PORT: "0",
      RATE_LIMIT_PER_MINUTE: "0",
    });
    const token = tokenOf(started);
    expect((await post(started.url, token, "/webhooks", JSON.stringify({ url: hook.url() }))).status).toBe(201);
    expect((await post(started.url, token, "/plants", '{"id":1,"name":"p"}')).status).toBe(200);
    await until(async () => hook.hanging(), { holds: (n) => n === 1, timeoutMs: 10_000 });
    const raw = await holdRequestInFlight(started, token);

    started.kill("SIGTERM");
    await started.waitForOutput(/SIGTERM received/);
    // Still listening while it drains: a plant created now gets its delivery before the exit.
    expect((await post(started.url, token, "/plants", '{"id":2,"name":"q"}')).status).toBe(200);
    await until(async () => hook.received.length, { holds: (n) => n === 2, timeoutMs: timeoutMs });
    expect(hook.received.map((r) => r.body)).toEqual(['{"id":1,"name":"p"}', '{"id":2,"name":"q"}']);
    expect(await started.exited).toBe(0);
    await raw.end();
    const output = await started.output();
    expect(output).toContain("1 request(s) still in flight at the shutdown deadline");
    expect(output).toContain("1 webhook attempt(s) still in flight at the shutdown deadline");
    expect(output).toContain("Stopped cleanly.");
    // The server's own clock, from its log lines: one deadline for both waits. Each with a
    // full timeout of its own (as before), they took twice the timeout.
    const timeOf = (message: string) => {
      const line = output.split("\n").find((l) => l.includes(message));
      return Date.parse((JSON.parse(line ?? "{}") as { time?: string }).time ?? "");
    };
    const shutdownMs = timeOf("Stopped cleanly.") - timeOf("SIGTERM received");
    expect(shutdownMs).toBeGreaterThanOrEqual(timeoutMs);
    expect(shutdownMs).toBeLessThan(1.5 * timeoutMs);
  }, 30_000);

  test.if(onPostgres)(
    "two instances on one database send each delivery once",
    async () => {
      const hook = startReceiver();
      cleanups.push(hook.stop);
      const env = { DATABASE_URL: await databaseUrl() };
      const [a, b] = await Promise.all([server(env), server(env)]);
      if (!a || !b) throw new Error("two instances");
      // Both start at once: whichever found no token prints the one it made.
      const token = printedToken(a) ?? printedToken(b);
      if (!token) throw new Error("neither instance printed the first token");
      const registered = await post(a.url, token, "/webhooks", JSON.stringify({ url: hook.url() }));
      const endpoint = ((await registered.json()) as { id: number }).id;
      const created = await Promise.all(
        Array.from({ length: 200 }, (_, i) => post(i % 2 ? a.url : b.url, token, "/plants", `{"id":${i},"name":"p"}`)),
      );
      expect(created.map((r) => r.status)).toEqual(Array(200).fill(200));
      const log = await until(() => deliveryLog(b.url, token, endpoint), {
        holds: (list) => list.length === 200 && list.every((d) => d.status === "delivered"),
        timeoutMs: 30_000,
      });
      expect(log.filter((d) => d.status === "delivered")).toHaveLength(200);
      const ids = hook.received.map((r) => r.headers["webhook-id"] as string);
      expect(new Set(ids).size).toBe(200);
      expect(ids).toHaveLength(200);
    },
    60_000,
  );
});
