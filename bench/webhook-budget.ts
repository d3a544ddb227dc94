/**
 * The webhook budget: what endpoints that fail fast cost the API. Two services with the same
 * settings, each on a SQLite file of its own: on "failing", the first bench user has 10
 * endpoints whose port refuses connections (so each of that user's creates queues 10
 * deliveries that fail at once); on "quiet", no endpoint. The read, write and mix scenarios run
 * on both in alternating rounds, each run after BACKLOG creates by that user on both sides, so
 * that even the read scenario runs with deliveries due; every figure is failing / quiet, the
 * median of the rounds' ratios. Part of `bun run bench`; alone:
 *
 *   bun bench/webhook-budget.ts
 */
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROUNDS, SECONDS } from "./options";
import {
  errorCount,
  figure,
  mark,
  pairedRatio,
  type Results,
  readyForLoad,
  runRounds,
  SCENARIOS,
  type TokenPair,
} from "./rounds";
import { cli, fail, fmt, type Running, SERVICE_LIMIT_OFF, startTarget } from "./targets";
import { wrk } from "./wrk";

const ENDPOINTS = 10;
/** Creates before each run: on "failing", ENDPOINTS times as many deliveries due during it. */
const BACKLOG = 1_000;
/** The discard port: nothing listens on it, so a connection is refused at once. */
const REFUSED = "http://127.0.0.1:9/hook";
/** The bar: throughput with the failing endpoints at least this share of the quiet run's. */
const BAR = 0.8;

type Side = "quiet" | "failing";

export interface BudgetFigures {
  results: Results<Side>;
  /** Attempts the failing service made over the whole run, and the seconds of load. */
  attempts: number;
  loadSeconds: number;
}

/** Resolves once a connection to `url`'s port was refused; fails the bench if something answers there. */
async function checkRefused(url: string) {
  const { hostname, port } = new URL(url);
  const refused = await new Promise<boolean>((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(true));
  });
  if (!refused) fail(`webhook budget: something listens on ${url}; it must refuse connections`);
}

async function registerEndpoints(url: string, token: string) {
  for (let i = 0; i < ENDPOINTS; i++) {
    const response = await fetch(`${url}/webhooks`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ url: `${REFUSED}?n=${i}` }),
    });
    if (response.status !== 201) fail(`webhook budget: registering an endpoint answered ${response.status}`);
  }
}

/** BACKLOG plants for `token`'s user, 100 requests at a time, ids past the ones wrk will use. */
async function createBacklog(url: string, token: string, idBase: number) {
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  for (let first = 0; first < BACKLOG; first += 100) {
    const created = await Promise.all(
      Array.from({ length: 100 }, (_, i) => {
        const id = idBase + 900_000_000 + first + i;
        return fetch(`${url}/plants`, { method: "POST", headers, body: `{"id":${id},"name":"backlog"}` });
      }),
    );
    if (created.some((response) => response.status !== 200)) fail("webhook budget: a backlog create failed");
  }
}

export async function webhookBudgetScenario(dir: string): Promise<BudgetFigures> {
  await checkRefused(REFUSED);
  // The limit off: the load is two tokens' (the header says so).
  const settings = { ...SERVICE_LIMIT_OFF, env: { ...SERVICE_LIMIT_OFF.env, WEBHOOK_ALLOW_PRIVATE: "true" } };
  const sides: Side[] = ["quiet", "failing"];
  const paths = { quiet: join(dir, "budget-quiet.sqlite"), failing: join(dir, "budget-failing.sqlite") };
  const tokens = {} as Record<Side, TokenPair>;
  const running = {} as Record<Side, Running>;
  for (const side of sides) {
    tokens[side] = [
      await cli(["token", "create", "--user", "bench-a"], paths[side]),
      await cli(["token", "create", "--user", "bench-b"], paths[side]),
    ];
    running[side] = await startTarget(settings, paths[side]);
    await readyForLoad(`webhook budget, ${side}`, running[side].url, tokens[side]);
  }
  await registerEndpoints(running.failing.url, tokens.failing[0]);
  const results = await runRounds(
    sides.map((side) => ({
      name: side,
      run: async (scenario, idBase) => {
        await createBacklog(running[side].url, tokens[side][0], idBase);
        return wrk(running[side].url, scenario, [...tokens[side], String(idBase)]);
      },
    })),
  );
  for (const side of sides) await running[side].stop();
  const db = new Database(paths.failing, { readonly: true });
  const attempts = (db.query("SELECT count(*) AS n FROM webhook_attempts").get() as { n: number }).n;
  db.close();
  return { results, attempts, loadSeconds: ROUNDS * SCENARIOS.length * SECONDS };
}

/** Prints the figures; answers the verdict: whether read and write each stayed at BAR or more. */
export function printWebhookBudget({ results, attempts, loadSeconds }: BudgetFigures): { met: boolean; line: string } {
  console.log(
    `\nWebhook budget — ${ENDPOINTS} endpoints refusing connections (one user's; each of its creates queues ${ENDPOINTS} deliveries) against none, ${ROUNDS} alternating rounds of ${SECONDS} s, each after ${BACKLOG} creates by that user; the service's defaults but the rate limit OFF (RATE_LIMIT_PER_MINUTE=0: the load is two tokens' and would get 429)\n`,
  );
  console.log("| scenario | quiet req/s | failing req/s | ratio | p99 ratio | errors |");
  console.log("|---|---|---|---|---|---|");
  for (const scenario of SCENARIOS) {
    const rps = (side: Side) => fmt(figure(results, side, scenario, "rps"));
    console.log(
      `| ${scenario} | ${rps("quiet")} | ${rps("failing")} | ${fmt(pairedRatio(results, "failing", "quiet", scenario, "rps"), 2)}× | ${fmt(pairedRatio(results, "failing", "quiet", scenario, "p99"), 2)}× | ${errorCount(results, "failing", scenario) + errorCount(results, "quiet", scenario)} |`,
    );
  }
  console.log(`\nAttempts made by the failing service: ${attempts} over ${loadSeconds} s of load and the warm-up.`);
  const read = pairedRatio(results, "failing", "quiet", "read", "rps");
  const write = pairedRatio(results, "failing", "quiet", "write", "rps");
  const met = read >= BAR && write >= BAR;
  return {
    met,
    line: `webhook budget: with ${ENDPOINTS} endpoints refusing connections, read ${fmt(read, 2)}× and write ${fmt(write, 2)}× of none (target ≥ ${BAR}× each): ${mark(met)}`,
  };
}

if (import.meta.main) {
  const dir = mkdtempSync(join(tmpdir(), "plant-store-budget-"));
  try {
    console.log(`\n${printWebhookBudget(await webhookBudgetScenario(dir)).line}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
