/**
 * The webhook budget: what endpoints that fail fast, or answer at once, cost the API. Services
 * with the same settings, each on a SQLite file of its own: on "failing", the first bench user
 * has 10 endpoints whose port refuses connections (so each of that user's creates queues 10
 * deliveries that fail at once); on "answering" (issue 41), 10 endpoints on a local receiver, a
 * process of its own answering 204 at once (so each create queues 10 deliveries that succeed);
 * on "quiet", no endpoint. The read, write and mix scenarios run on all in alternating rounds,
 * each run after BACKLOG creates by that user on every side, so that even the read scenario runs
 * with deliveries due; every figure is failing / quiet or answering / quiet, the median of the
 * rounds' ratios. Part of `bun run bench`; alone (both variants unless named):
 *
 *   bun bench/webhook-budget.ts [failing] [answering]
 */
import { Database } from "bun:sqlite";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
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
/** Issue 41's bar: creates with the answering endpoints at least this share of the quiet run's. */
const ANSWERING_BAR = 0.5;

const VARIANTS = ["failing", "answering"] as const;
type Variant = (typeof VARIANTS)[number];
type Side = "quiet" | Variant;

export interface BudgetFigures {
  variants: Variant[];
  results: Results<Side>;
  /** Attempts the failing service made over the whole run, and the seconds of load. */
  attempts: number;
  /** On the answering service: deliveries the receiver got, and those still pending at the end. */
  received: number;
  pendingLeft: number;
  loadSeconds: number;
}

/** A receiver answering every POST with 204 at once; GET answers how many it got. */
const RECEIVER = `
let got = 0;
const server = Bun.serve({ hostname: "127.0.0.1", port: 0, async fetch(request) {
  if (request.method === "GET") return new Response(String(got));
  await request.text(); got++; return new Response(null, { status: 204 });
} });
console.log(server.port);`;

async function startReceiver() {
  const proc = Bun.spawn(["bun", "-e", RECEIVER], { stdout: "pipe" });
  const reader = proc.stdout.getReader();
  const port = Number(new TextDecoder().decode((await reader.read()).value).trim());
  if (!port) fail("webhook budget: the receiver did not start");
  const url = `http://127.0.0.1:${port}`;
  return {
    url: `${url}/hook`,
    received: async () => Number(await (await fetch(`${url}/`)).text()),
    stop: async () => {
      proc.kill();
      await proc.exited;
    },
  };
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

async function registerEndpoints(url: string, token: string, endpoint: string) {
  for (let i = 0; i < ENDPOINTS; i++) {
    const response = await fetch(`${url}/webhooks`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ url: `${endpoint}?n=${i}` }),
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

export async function webhookBudgetScenario(dir: string, variants: Variant[] = [...VARIANTS]): Promise<BudgetFigures> {
  if (variants.includes("failing")) await checkRefused(REFUSED);
  const receiver = variants.includes("answering") ? await startReceiver() : undefined;
  // The limit off: the load is two tokens' (the header says so).
  const settings = { ...SERVICE_LIMIT_OFF, env: { ...SERVICE_LIMIT_OFF.env, WEBHOOK_ALLOW_PRIVATE: "true" } };
  const sides: Side[] = ["quiet", ...variants];
  const paths = Object.fromEntries(sides.map((side) => [side, join(dir, `budget-${side}.sqlite`)])) as Record<
    Side,
    string
  >;
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
  if (variants.includes("failing")) await registerEndpoints(running.failing.url, tokens.failing[0], REFUSED);
  if (receiver) await registerEndpoints(running.answering.url, tokens.answering[0], receiver.url);
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
  const count = (side: Side, sql: string) => {
    const db = new Database(paths[side], { readonly: true });
    const n = (db.query(sql).get() as { n: number }).n;
    db.close();
    return n;
  };
  const attempts = variants.includes("failing") ? count("failing", "SELECT count(*) AS n FROM webhook_attempts") : 0;
  const received = receiver ? await receiver.received() : 0;
  await receiver?.stop();
  const pendingLeft = receiver
    ? count("answering", "SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'")
    : 0;
  return { variants, results, attempts, received, pendingLeft, loadSeconds: ROUNDS * SCENARIOS.length * SECONDS };
}

/**
 * Prints the figures; answers the verdict: whether read and write each stayed at BAR or more with
 * the failing endpoints, and write at ANSWERING_BAR or more with the answering ones.
 */
export function printWebhookBudget({
  variants,
  results,
  attempts,
  received,
  pendingLeft,
  loadSeconds,
}: BudgetFigures): {
  met: boolean;
  line: string;
} {
  const described = {
    failing: `${ENDPOINTS} endpoints refusing connections ("failing")`,
    answering: `${ENDPOINTS} endpoints on a local receiver answering 204 at once ("answering")`,
  };
  console.log(
    `\nWebhook budget — ${variants.map((variant) => described[variant]).join(", and ")} (one user's; each of its creates queues ${ENDPOINTS} deliveries) against none, ${ROUNDS} alternating rounds of ${SECONDS} s, each after ${BACKLOG} creates by that user; the service's defaults but the rate limit OFF (RATE_LIMIT_PER_MINUTE=0: the load is two tokens' and would get 429); load ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}\n`,
  );
  const heads = variants.map((variant) => `${variant} req/s | ratio | p99 ratio`).join(" | ");
  console.log(`| scenario | quiet req/s | ${heads} | errors |`);
  console.log(`|---|---|${variants.map(() => "---|---|---|").join("")}---|`);
  for (const scenario of SCENARIOS) {
    const rps = (side: Side) => fmt(figure(results, side, scenario, "rps"));
    const cells = variants.map(
      (variant) =>
        `${rps(variant)} | ${fmt(pairedRatio(results, variant, "quiet", scenario, "rps"), 2)}× | ${fmt(pairedRatio(results, variant, "quiet", scenario, "p99"), 2)}×`,
    );
    const errors = (["quiet", ...variants] as Side[]).reduce(
      (sum, side) => sum + errorCount(results, side, scenario),
      0,
    );
    console.log(`| ${scenario} | ${rps("quiet")} | ${cells.join(" | ")} | ${errors} |`);
  }
  const verdicts: string[] = [];
  let met = true;
  if (variants.includes("failing")) {
    console.log(`\nAttempts made by the failing service: ${attempts} over ${loadSeconds} s of load and the warm-up.`);
    const read = pairedRatio(results, "failing", "quiet", "read", "rps");
    const write = pairedRatio(results, "failing", "quiet", "write", "rps");
    const ok = read >= BAR && write >= BAR;
    met &&= ok;
    verdicts.push(
      `with ${ENDPOINTS} endpoints refusing connections, read ${fmt(read, 2)}× and write ${fmt(write, 2)}× of none (target ≥ ${BAR}× each): ${mark(ok)}`,
    );
  }
  if (variants.includes("answering")) {
    console.log(
      `${variants.includes("failing") ? "" : "\n"}Deliveries the answering service's receiver got: ${fmt(received)} over ${loadSeconds} s of load and the warm-up; ${fmt(pendingLeft)} still pending at the end.`,
    );
    const write = pairedRatio(results, "answering", "quiet", "write", "rps");
    const ok = write >= ANSWERING_BAR;
    met &&= ok;
    verdicts.push(
      `with ${ENDPOINTS} endpoints answering at once, write ${fmt(write, 2)}× of none (target ≥ ${ANSWERING_BAR}×): ${mark(ok)}`,
    );
  }
  return { met, line: `webhook budget: ${verdicts.join("; ")}` };
}

if (import.meta.main) {
  const dir = mkdtempSync(join(tmpdir(), "plant-store-budget-"));
  const named = VARIANTS.filter((variant) => process.argv.includes(variant));
  try {
    console.log(
      `\n${printWebhookBudget(await webhookBudgetScenario(dir, named.length > 0 ? named : [...VARIANTS])).line}`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
