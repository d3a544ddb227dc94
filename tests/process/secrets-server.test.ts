import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { hashToken } from "../../src/core/tokens";
import { freshPostgresDatabase, onPostgres, onSqlite } from "../support/helpers";
import { runCli, scratchDir, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { until } from "../support/until";
import { bootstrapToken } from "../support/users";
import { startReceiver } from "../support/webhook-receiver";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

describe("secrets stay secret, on the real server", () => {
  test.if(onSqlite)(
    "after a full run the server's output holds no token, header or body, and the database file no token",
    async () => {
      const scratch = scratchDir();
      const path = join(scratch.dir, "plants.sqlite");
      const env = { DATABASE_URL: path };
      try {
        const token =
          (await runCli(["token", "create", "--user", "alice"], env)).stdout.trim().split("\n").at(-1) ?? "";
        const server = await startServer({ ...env, RATE_LIMIT_PER_MINUTE: "5" });
        expect(server.startupOutput).not.toContain("pst_");
        const wrongToken = `pst_${"w".repeat(43)}`;
        const send = (authorization: string, init: RequestInit = {}) =>
          fetch(`${server.url}/plants`, { ...init, headers: { authorization, "content-type": "application/json" } });

        expect((await send(`Bearer ${token}`, { method: "POST", body: '{"id":1,"name":"body-marker"}' })).status).toBe(
          200,
        );
        expect((await send(`Bearer ${token}`, { method: "POST", body: '{"id":"body-marker"}' })).status).toBe(400);
        expect((await send(`Bearer ${token}`, { method: "POST", body: "{body-marker" })).status).toBe(400);
        expect((await send(`Bearer ${wrongToken}`)).status).toBe(401);
        expect((await send(`Basic ${btoa(`alice:${token}`)}`)).status).toBe(401);
        expect((await fetch(`${server.url}/plants?access_token=${token}`)).status).toBe(401);
        let limited = 0;
        for (let i = 0; i < 6; i++) if ((await send(`Bearer ${token}`)).status === 429) limited++;
        expect(limited).toBeGreaterThan(0);
        expect(await server.stop()).toBe(0);

        const output = await server.output();
        for (const secret of [token, token.slice(4), wrongToken, "body-marker", "Bearer ", btoa(`alice:${token}`)]) {
          expect(output).not.toContain(secret);
        }
        expect(output.toLowerCase()).not.toContain("authorization:");

        const file = readFileSync(path).toString("latin1");
        expect(file).toContain(hashToken(token));
        expect(file).not.toContain(token.slice(4));
      } finally {
        scratch.cleanup();
      }
    },
  );

  test("webhook secrets and signatures reach no log line, and are never answered again after registration", async () => {
    const scratch = scratchDir();
    const hook = startReceiver((request) => new Response("no", { status: request.path === "/ok" ? 200 : 500 }));
    const env = {
      DATABASE_URL: onPostgres ? await freshPostgresDatabase() : join(scratch.dir, "plants.sqlite"),
      WEBHOOK_ALLOW_PRIVATE: "true",
      WEBHOOK_RETRY_DELAYS: "50",
      LOG_LEVEL: "debug",
    };
    try {
      const server = await startServer(env);
      const token = bootstrapToken(server);
      const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
      const secrets: string[] = [];
      for (const path of ["/ok", "/fails"]) {
        const body = JSON.stringify({ url: hook.url(path) });
        const response = await fetch(`${server.url}/webhooks`, { method: "POST", headers, body });
        secrets.push(((await response.json()) as { secret: string }).secret);
      }
      await fetch(`${server.url}/plants`, { method: "POST", headers, body: '{"id":1,"name":"Fern"}' });
      await until(async () => hook.received.length, { holds: (n) => n >= 3, timeoutMs: 10_000 });
      expect(hook.received.length).toBeGreaterThanOrEqual(3);
      const listed = await (await fetch(`${server.url}/webhooks`, { headers })).text();
      const log = await (await fetch(`${server.url}/webhooks/1/deliveries`, { headers })).text();
      expect(await server.stop()).toBe(0);
      const output = await server.output();
      const signatures = hook.received.map((r) => (r.headers["webhook-signature"] as string).slice(3));
      for (const secret of [...secrets, ...secrets.map((s) => s.slice(6)), ...signatures]) {
        expect(output).not.toContain(secret);
        expect(listed).not.toContain(secret);
        expect(log).not.toContain(secret);
      }
    } finally {
      hook.stop();
      scratch.cleanup();
    }
  });
});
