/**
 * Webhook retention in a real `bun src/index.ts`: the server prunes as it runs, from its start.
 * The finer points (batches, what stays, several instances) are in tests/engines/webhook-retention.test.ts.
 */

import { Database } from "bun:sqlite";
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { SQL } from "bun";
import { ENGINE, onPostgres } from "../support/helpers";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { until } from "../support/until";
import { bootstrapToken } from "../support/users";
import { startReceiver } from "../support/webhook-receiver";
import { webhookServers } from "../support/webhook-servers";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const { cleanups, databaseUrl, server } = webhookServers();

/** Moves the deliveries of plants `ids` 40 days into the past; the server must be down. */
async function ageDeliveries(url: string, ids: number[]) {
  const ofPlants = ids.map((id) => `payload LIKE '{"id":${id},%'`).join(" OR ");
  if (onPostgres) {
    const sql = new SQL(url, { max: 1 });
    await sql.unsafe(`UPDATE webhook_deliveries SET created_at = created_at - interval '40 days' WHERE ${ofPlants}`);
    await sql.close();
    return;
  }
  const db = new Database(url);
  db.run(`UPDATE webhook_deliveries SET created_at = created_at - 40 * 86400000 WHERE ${ofPlants}`);
  db.close();
}

describe(`webhook retention in a running server (${ENGINE})`, () => {
  test("as it starts, a server removes delivered deliveries older than WEBHOOK_RETENTION_DAYS; recent and pending ones stay", async () => {
    const hook = startReceiver((request) => new Response("", { status: request.path === "/ok" ? 200 : 500 }));
    cleanups.push(hook.stop);
    const env = { DATABASE_URL: await databaseUrl(), WEBHOOK_RETENTION_DAYS: "30", WEBHOOK_RETRY_DELAYS: "3600000" };
    const first = await server(env);
    const token = bootstrapToken(first);
    const call = (url: string, path: string, body?: unknown) =>
      fetch(`${url}${path}`, {
        method: body === undefined ? "GET" : "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const endpoint = async (path: string) =>
      ((await (await call(first.url, "/webhooks", { url: hook.url(path) })).json()) as { id: number }).id;
    const ok = await endpoint("/ok");
    const down = await endpoint("/down");
    for (const id of [1, 2, 3]) expect((await call(first.url, "/plants", { id, name: `p${id}` })).status).toBe(200);
    const log = async (url: string, id: number) =>
      (await (await call(url, `/webhooks/${id}/deliveries`)).json()) as Array<{ status: string; attempts: number }>;
    // Every delivery tried once: delivered to /ok, pending (retried in an hour) for /down.
    await until(async () => [...(await log(first.url, ok)), ...(await log(first.url, down))], {
      holds: (all) => all.length === 6 && all.every((d) => d.attempts === 1),
      what: "one attempt per delivery",
    });
    expect(await first.stop()).toBe(0);

    await ageDeliveries(env.DATABASE_URL, [1, 2]);
    const second = await server(env);
    const okLog = await until(() => log(second.url, ok), {
      holds: (list) => list.length === 1,
      what: "the old delivered deliveries to go",
    });
    expect(okLog.map((d) => d.status)).toEqual(["delivered"]);
    expect((await log(second.url, down)).map((d) => d.status)).toEqual(["pending", "pending", "pending"]);
    expect(await second.stop()).toBe(0);
  });
});
