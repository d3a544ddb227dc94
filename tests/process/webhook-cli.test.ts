import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import type { Stores, WebhookStore } from "../../src/core/stores";
import { connect } from "../../src/db/postgres/client";
import { createPostgresStores, guardOf } from "../../src/db/postgres/stores";
import { openDatabase } from "../../src/db/sqlite/client";
import { createSqliteStores } from "../../src/db/sqlite/stores";
import { POLL_MS } from "../../src/webhooks/rules";
import { newSecret } from "../../src/webhooks/signing";
import { ENGINE, freshPostgresDatabase, onPostgres, postgresTarget } from "../support/helpers";
import { runToExit, scratchDir } from "../support/process";
import { CLI_FAN_OUT_TIMEOUT_MS } from "../support/timeouts";
import { until } from "../support/until";
import { userWithToken } from "../support/users";
import { startDispatcher, startReceiver } from "../support/webhook-receiver";

setDefaultTimeout(CLI_FAN_OUT_TIMEOUT_MS);

/*
 * `bun run cli webhook failed|redeliver` run as an operator runs them, on the database of the
 * engine under test, while this process plays the server: its stores write the deliveries and
 * its dispatcher sends them.
 */

let scratch: ReturnType<typeof scratchDir>;
const running: Array<{ stop(): unknown }> = [];
beforeEach(() => {
  scratch = scratchDir();
});
afterEach(async () => {
  for (const thing of running.splice(0).reverse()) await thing.stop();
  scratch.cleanup();
});

/** `--silent` keeps bun's own "$ command" and "exited with code" lines out of stderr. */
const cli = (env: Record<string, string>, ...args: string[]) =>
  runToExit(["bun", "run", "--silent", "cli", ...args], { env });
const lines = (text: string) => text.trim().split("\n").filter(Boolean);
const firstLine = (text: string) => text.split("\n")[0];

/** The server's side: stores on a file (SQLite) or a fresh database (PostgreSQL), and the CLI's DATABASE_URL for it. */
async function serverStores(): Promise<{ stores: Stores; env: Record<string, string> }> {
  let stores: Stores;
  let url: string;
  if (onPostgres) {
    url = await freshPostgresDatabase();
    const target = postgresTarget(url);
    const { client } = connect(target);
    stores = createPostgresStores(client, { log: () => {}, ...guardOf(target) });
  } else {
    url = join(scratch.dir, "plants.sqlite");
    const { sqlite } = openDatabase({ path: url, synchronous: "FULL" });
    stores = createSqliteStores(sqlite, { maxQueued: 1024, lockTimeoutMs: 5_000, log: () => {} });
  }
  running.push({ stop: () => stores.close() });
  return { stores, env: { DATABASE_URL: url } };
}

function receiver(...args: Parameters<typeof startReceiver>) {
  const started = startReceiver(...args);
  running.push(started);
  return started;
}

/** A user with endpoints at `urls` (ids in that order), and one plant: a delivery to each. */
async function plantWithEndpoints(stores: Stores, urls: string[]) {
  const { id: owner } = await userWithToken(stores.tokens);
  const endpoints: number[] = [];
  for (const url of urls)
    endpoints.push(((await stores.webhooks.register(owner, url, newSecret(), 10, undefined)) as { id: number }).id);
  await stores.plants.createPlant(owner, { id: 1n, name: "Fern" });
  return { owner, endpoints };
}

/** Sends due deliveries with no retries, so one failed attempt fails a delivery. */
function dispatcher(stores: Stores) {
  const started = startDispatcher(stores, { retryDelaysMs: [] });
  running.push(started);
  return started;
}

type FailedDelivery = NonNullable<Awaited<ReturnType<WebhookStore["failedDeliveries"]>>>[number];

/** Polls until the endpoint's one delivery has failed (or 10 s pass); it as the store lists it. */
async function failedOf(stores: Stores, endpoint: number): Promise<FailedDelivery> {
  const failed = await until(async () => (await stores.webhooks.failedDeliveries(endpoint)) ?? [], {
    holds: (list) => list.length === 1,
    timeoutMs: 10_000,
  });
  expect(failed).toHaveLength(1);
  return failed[0] as FailedDelivery;
}

const HINT = "1 failed delivery; send one again with: bun run cli webhook redeliver <delivery-id>";

describe(`bun run cli webhook (${ENGINE})`, () => {
  test("failed lists a failed delivery; redeliver sends it again with the same webhook-id, once", async () => {
    let status = 500;
    const hook = receiver(() => new Response("no", { status }));
    const closed = startReceiver();
    const refusedUrl = closed.url("/refused");
    closed.stop();
    const { stores, env } = await serverStores();
    const { owner, endpoints } = await plantWithEndpoints(stores, [hook.url("/a"), refusedUrl]);
    const [answered, refused] = endpoints as [number, number];
    dispatcher(stores);
    const failed = await failedOf(stores, answered);
    expect(failed).toMatchObject({ status: "failed", attempts: 1, lastStatus: 500, lastError: null });
    const { id } = failed;
    expect(id).toMatch(/^msg_[0-9a-f]{32}$/);
    const unanswered = await failedOf(stores, refused);

    const [listed, listedRefused] = await Promise.all([
      cli(env, "webhook", "failed", String(answered)),
      cli(env, "webhook", "failed", String(refused)),
    ]);
    expect({ code: listed.code, stderr: listed.stderr }).toEqual({ code: 0, stderr: "" });
    const [header, row, hint] = lines(listed.stdout);
    expect(header?.split(/ {2,}/)).toEqual(["ID", "ATTEMPTS", "LAST STATUS", "CREATED", "LAST ERROR"]);
    expect(row?.split(/ {2,}/)).toEqual([id, "1", "500", failed.createdAt.toISOString(), "-"]);
    expect(hint).toBe(HINT);
    // No answer: no status, and the error says why, on one line.
    expect(listedRefused.code).toBe(0);
    expect(lines(listedRefused.stdout)[1]?.split(/ {2,}/)).toEqual([
      unanswered.id,
      "1",
      "none",
      unanswered.createdAt.toISOString(),
      "connection refused",
    ]);

    status = 200;
    const redelivered = await cli(env, "webhook", "redeliver", id);
    expect(redelivered).toEqual({
      code: 0,
      stderr: "",
      stdout: `Delivery ${id} is due again: a running server sends it within ${POLL_MS / 1000} s, with the same webhook-id.\n`,
    });
    const log = await until(async () => stores.webhooks.deliveries(owner, answered, undefined, 10), {
      holds: (page) => typeof page === "object" && page.deliveries[0]?.status === "delivered",
      timeoutMs: 10_000,
    });
    expect(log).toMatchObject({ deliveries: [{ id, status: "delivered", attempts: 2, lastStatus: 200 }] });
    expect(hook.at("/a").map((request) => request.headers["webhook-id"])).toEqual([id, id]);

    const [none, again] = await Promise.all([
      cli(env, "webhook", "failed", String(answered)),
      cli(env, "webhook", "redeliver", id),
    ]);
    expect(none).toEqual({ code: 0, stderr: "", stdout: `Endpoint ${answered} has no failed deliveries.\n` });
    expect(again).toEqual({
      code: 1,
      stdout: "",
      stderr: `plant-store: delivery ${id} has not failed (it is pending or delivered); only a failed one is redelivered\n`,
    });
    expect(hook.at("/a")).toHaveLength(2);
  });

  test("an unknown endpoint or delivery is an error naming it, exit 1", async () => {
    const { env } = await serverStores();
    const unknownDelivery = `msg_${"0".repeat(32)}`;
    const results = await Promise.all([
      cli(env, "webhook", "failed", "7"),
      cli(env, "webhook", "failed", "2147483647"),
      cli(env, "webhook", "redeliver", unknownDelivery),
    ]);
    expect(results).toEqual([
      { code: 1, stdout: "", stderr: "plant-store: no webhook endpoint with id 7\n" },
      { code: 1, stdout: "", stderr: "plant-store: no webhook endpoint with id 2147483647\n" },
      { code: 1, stdout: "", stderr: `plant-store: no delivery with id ${unknownDelivery}\n` },
    ]);
  });

  test("a delivery whose endpoint a 410 disabled is listed but not redelivered: register it again", async () => {
    const hook = receiver(() => new Response("gone", { status: 410 }));
    const { stores, env } = await serverStores();
    const { endpoints } = await plantWithEndpoints(stores, [hook.url("/gone")]);
    const endpoint = endpoints[0] as number;
    dispatcher(stores);
    const failed = await failedOf(stores, endpoint);
    const { id } = failed;

    const listed = await cli(env, "webhook", "failed", String(endpoint));
    expect(listed.code).toBe(0);
    expect(lines(listed.stdout)[1]?.split(/ {2,}/)).toEqual([id, "1", "410", failed.createdAt.toISOString(), "-"]);
    const redelivered = await cli(env, "webhook", "redeliver", id);
    expect(redelivered).toEqual({
      code: 1,
      stdout: "",
      stderr:
        `plant-store: delivery ${id} was not queued: its endpoint is disabled (it answered 410 Gone); ` +
        "its owner must register the URL again (POST /webhooks)\n",
    });
    expect(await stores.webhooks.failedDeliveries(endpoint)).toMatchObject([{ id, status: "failed", attempts: 1 }]);
    expect(hook.at("/gone")).toHaveLength(1);
  });
});

// Arguments are read before any database is opened, whichever the engine.
describe("bun run cli webhook: arguments", () => {
  test("ids are checked before anything runs: a bad or missing one is a usage error, exit 2", async () => {
    const env = { DATABASE_URL: join(scratch.dir, "plants.sqlite") };
    const badEndpoints = ["abc", "0", "-1", "03", "3.0", "", "2147483648", "99999999999"];
    const hex = "0123456789abcdef".repeat(2);
    const badDeliveries = ["3", `msg_${hex.slice(1)}`, `msg_${hex.toUpperCase()}`, `MSG_${hex}`, `msg_${hex}0`];
    const [endpointResults, deliveryResults, missing] = await Promise.all([
      Promise.all(badEndpoints.map((id) => cli(env, "webhook", "failed", id))),
      Promise.all(badDeliveries.map((id) => cli(env, "webhook", "redeliver", id))),
      Promise.all([cli(env, "webhook", "failed"), cli(env, "webhook", "redeliver"), cli(env, "webhook")]),
    ]);
    const outcome = ({ code, stdout, stderr }: { code: number; stdout: string; stderr: string }) => ({
      code,
      stdout,
      first: firstLine(stderr),
    });
    for (const result of endpointResults) {
      expect(outcome(result)).toEqual({
        code: 2,
        stdout: "",
        first: "plant-store: endpoint id must be a positive integer such as 3, at most 2147483647",
      });
      expect(result.stderr).toContain("\n\nUsage: bun run cli webhook failed <endpoint-id>\n");
    }
    for (const result of deliveryResults) {
      expect(outcome(result)).toEqual({
        code: 2,
        stdout: "",
        first: "plant-store: delivery id must be msg_ followed by 32 lowercase hex digits, as webhook failed shows it",
      });
    }
    expect(missing.map(outcome)).toEqual([
      { code: 2, stdout: "", first: "plant-store: webhook failed needs an endpoint id (as GET /webhooks shows it)" },
      { code: 2, stdout: "", first: "plant-store: webhook redeliver needs a delivery id (see webhook failed)" },
      { code: 2, stdout: "", first: "plant-store: webhook needs a command: failed or redeliver" },
    ]);
    // Nothing was opened, so nothing was created.
    expect(await Bun.file(env.DATABASE_URL).exists()).toBe(false);
  });

  test("--help names both commands, at the top, for the group and for each", async () => {
    const [top, group, failed, redeliver] = await Promise.all([
      cli({}, "--help"),
      cli({}, "webhook", "--help"),
      cli({}, "webhook", "failed", "-h"),
      cli({}, "webhook", "redeliver", "--help"),
    ]);
    for (const { code, stderr } of [top, group, failed, redeliver])
      expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    for (const synopsis of ["webhook failed <endpoint-id>", "webhook redeliver <delivery-id>"]) {
      expect(top.stdout).toContain(`  bun run cli ${synopsis}  `);
      expect(group.stdout).toContain(`  bun run cli ${synopsis}  `);
    }
    expect(group.stdout).not.toContain("token");
    expect(failed.stdout).toStartWith("Usage: bun run cli webhook failed <endpoint-id>\n");
    expect(redeliver.stdout).toStartWith("Usage: bun run cli webhook redeliver <delivery-id>\n");
    expect(redeliver.stdout).toContain("410");
  });
});
