/**
 * The large store: 1,000,000 plants over 1,000 users, one of whom (the pager) owns 100,000 of
 * them, tagged. On it, the read scenario (two users of 1,000 plants, as on the small store) and
 * the page scenario (bench/lua/page.lua: the pager's plants page by page, following `next`
 * links, half the walks filtered by a tag), each against the read scenario on a store of 2,000
 * plants, in alternating rounds; the page scenario also with no walk and with every walk by
 * tag, to show where its cost lies. The service only: the baseline does not page.
 */
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { ROUNDS } from "./options";
import { cli, fmt, median, type Running, SERVICE_LIMIT_OFF, seedOverHttp, startTarget } from "./targets";
import { type WrkResult, wrk } from "./wrk";

const USERS = 1000;
const PLANTS = 1_000_000;
const PAGER_PLANTS = 100_000;
/** Plants each of the two read users has, on both stores. */
const PER_READER = 1000;
/** A walk ends before a page with chance 1 / this, so it is this many pages long on average. */
const RESTART_EVERY = 20;
const TAG_SHARE = 0.5;
/** The pager's tags, and how many of every 1,000 of its plants carry each; the rest have none. */
const TAGS: ReadonlyArray<readonly [string, number]> = [
  ["green", 300],
  ["tropical", 200],
  ["succulent", 150],
  ["fern", 100],
  ["herb", 100],
  ["cactus", 45],
  ["orchid", 4],
  ["air plant", 1],
];
const BAR = 1 / 1.15;

/** A tag spread over the ids by a multiplicative hash, the same on every run. */
function tagFor(id: number): string | null {
  let slot = (Math.imul(id, 0x9e3779b1) >>> 0) % 1000;
  for (const [tag, share] of TAGS) {
    if (slot < share) return tag;
    slot -= share;
  }
  return null;
}

/**
 * Writes the pager's plants and the filler users straight into the file, so that with the two
 * read users' plants (seeded later over HTTP) the store holds PLANTS plants over USERS users.
 */
function seedLargeStore(databasePath: string, pagerName: string) {
  const db = new Database(databasePath);
  db.run("PRAGMA journal_mode = WAL");
  const pager = (db.query("SELECT id FROM users WHERE name = ?").get(pagerName) as { id: number }).id;
  const insertUser = db.prepare("INSERT INTO users (name, created_at) VALUES (?, 0) RETURNING id");
  const insertPlant = db.prepare("INSERT INTO plants (owner_id, id, name, tag) VALUES (?, ?, ?, ?)");
  const fillers = USERS - 3;
  const fillerPlants = PLANTS - PAGER_PLANTS - 2 * PER_READER;
  db.transaction(() => {
    for (let p = 1; p <= PAGER_PLANTS; p++) insertPlant.run(pager, p, `Plant ${p}`, tagFor(p));
    for (let u = 0; u < fillers; u++) {
      const { id } = insertUser.get(`filler-${u}`) as { id: number };
      const count = Math.floor(fillerPlants / fillers) + (u < fillerPlants % fillers ? 1 : 0);
      for (let p = 1; p <= count; p++) insertPlant.run(id, p, `Filler ${p}`, "seed");
    }
  })();
  db.run("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
}

/**
 * The runs of a round, in order (reversed every other round). The page scenario with all its
 * walks untagged and with all of them tagged say where its cost lies; they set no target.
 */
const RUNS = [
  { key: "small", label: "read `?limit=20`, 2,000 plants", log: "read, 2,000 plants" },
  { key: "large", label: "read `?limit=20`, large store", log: "read, large store" },
  { key: "page", label: "**page** `?limit=20&after=…`, following `next`, half the walks by tag", log: "page" },
  { key: "untagged", label: "page, no walk by tag (not a target)", log: "page, no tag" },
  { key: "tagged", label: "page, every walk by tag (not a target)", log: "page, all by tag" },
] as const;
type Run = (typeof RUNS)[number]["key"];

export interface LargeStoreFigures {
  plants: number;
  users: number;
  results: Record<Run, WrkResult[]>;
}

export async function largeStoreCheck(dir: string): Promise<LargeStoreFigures> {
  // The limit off: the load is two readers' and a pager's tokens (the header says so).
  const service = SERVICE_LIMIT_OFF;
  const smallPath = join(dir, "small.sqlite");
  const largePath = join(dir, "large.sqlite");
  const readers: Record<string, [string, string]> = {};
  for (const path of [smallPath, largePath]) {
    const a = await cli(["token", "create", "--user", "bench-a"], path);
    const b = await cli(["token", "create", "--user", "bench-b"], path);
    readers[path] = [a, b];
  }
  const pagerToken = await cli(["token", "create", "--user", "bench-pager"], largePath);
  seedLargeStore(largePath, "bench-pager");
  const servers: Record<string, Running> = {};
  for (const path of [smallPath, largePath]) {
    const server = await startTarget(service, path);
    servers[path] = server;
    const [a, b] = readers[path] as [string, string];
    await seedOverHttp(server.url, a, PER_READER);
    await seedOverHttp(server.url, b, PER_READER);
  }
  const small = servers[smallPath] as Running;
  const large = servers[largePath] as Running;
  const readArgs = (path: string) => [...(readers[path] as [string, string]), "0"];
  const pageArgs = (tagShare: number) =>
    [pagerToken, String(PAGER_PLANTS), String(RESTART_EVERY), String(tagShare)].concat(
      TAGS.map(([tag]) => encodeURIComponent(tag)),
    );
  const runs: Record<Run, (seconds?: number) => Promise<WrkResult>> = {
    small: (seconds) => wrk(small.url, "read", readArgs(smallPath), seconds),
    large: (seconds) => wrk(large.url, "read", readArgs(largePath), seconds),
    page: (seconds) => wrk(large.url, "page", pageArgs(TAG_SHARE), seconds),
    untagged: (seconds) => wrk(large.url, "page", pageArgs(0), seconds),
    tagged: (seconds) => wrk(large.url, "page", pageArgs(1), seconds),
  };
  for (const { key } of RUNS) await runs[key](1);

  const db = new Database(largePath, { readonly: true });
  const count = (sql: string) => (db.query(sql).get() as { n: number }).n;
  const figures: LargeStoreFigures = {
    plants: count("SELECT count(*) AS n FROM plants"),
    users: count("SELECT count(*) AS n FROM users"),
    results: { small: [], large: [], page: [], untagged: [], tagged: [] },
  };
  db.close();
  for (let round = 1; round <= ROUNDS; round++) {
    for (const { key, log } of round % 2 === 1 ? RUNS : [...RUNS].reverse()) {
      const result = await runs[key]();
      figures.results[key].push(result);
      console.log(
        `large-store round ${round} ${log.padEnd(18)} ${fmt(result.rps).padStart(7)} req/s  p50 ${fmt(result.p50, 2)} ms  p99 ${fmt(result.p99, 2)} ms  non-2xx ${result.non2xx}  socket errors ${result.errors}`,
      );
    }
  }
  for (const server of Object.values(servers)) await server.stop();
  return figures;
}

/** The median over rounds of `run` / the small store's read in the same round. */
function pairedRatio({ results }: LargeStoreFigures, run: Run, key: "rps" | "p99") {
  return median(results[run].map((result, i) => result[key] / (results.small[i] as WrkResult)[key]));
}

const sum = (results: WrkResult[], pick: (result: WrkResult) => number) =>
  results.reduce((total, result) => total + pick(result), 0);
const failures = (results: WrkResult[]) => sum(results, (result) => result.non2xx + result.errors);

export function printLargeStore(figures: LargeStoreFigures) {
  console.log(
    `\nLarge store: ${fmt(figures.plants)} plants over ${fmt(figures.users)} users, one of them (the pager) with ${fmt(PAGER_PLANTS)}, ${TAGS.length} tags over ${fmt(TAGS.reduce((total, [, share]) => total + share, 0) / 10)} % of them (the rarest on 0.1 %); against the read scenario on a 2,000-plant store, ${ROUNDS} alternating rounds. The service only (the baseline does not page), its defaults but the rate limit OFF (RATE_LIMIT_PER_MINUTE=0: the load is three tokens' and would get 429).\n`,
  );
  console.log(
    "| scenario | req/s | ratio to read at 2,000 | p50 ms | p99 ms | p99 ratio | bytes per answer | non-2xx + socket errors |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const { key, label } of RUNS) {
    const results = figures.results[key];
    const m = (figure: "rps" | "p50" | "p99" | "bytesPerResponse", digits = 0) =>
      fmt(median(results.map((result) => result[figure])), digits);
    const ratio = key === "small" ? "1.00×" : `**${fmt(pairedRatio(figures, key, "rps"), 2)}×**`;
    const p99 = key === "small" ? "1.00×" : `${fmt(pairedRatio(figures, key, "p99"), 2)}×`;
    console.log(
      `| ${label} | ${m("rps")} | ${ratio} | ${m("p50", 2)} | ${m("p99", 2)} | ${p99} | ${m("bytesPerResponse")} | ${failures(results)} |`,
    );
  }
  const count = (name: string) => sum(figures.results.page, (result) => result.counts[name] ?? 0);
  const requests = count("followed") + count("started");
  console.log(
    `\nPage walks (the page row): ${fmt((100 * count("followed")) / requests, 1)} % of requests followed a \`next\` link, the rest began a walk after a random id (1 in ${RESTART_EVERY} on average, and after a last page); ${fmt((100 * count("tagged")) / count("started"), 1)} % of walks filtered by a tag; ${fmt(count("last_pages"))} last pages reached; ${count("bad_links")} unreadable links.`,
  );
}

/** The targets this check sets, each with whether it is met. */
export function largeStoreVerdicts(figures: LargeStoreFigures): Array<{ line: string; met: boolean }> {
  const { results } = figures;
  const read = pairedRatio(figures, "large", "rps");
  const page = pairedRatio(figures, "page", "rps");
  const pageRuns = [...results.page, ...results.untagged, ...results.tagged];
  const pageFaults = failures(pageRuns) + sum(pageRuns, (result) => result.counts.bad_links ?? 0);
  const followed = sum(results.page, (result) => result.counts.followed ?? 0);
  const pageMet = page >= BAR && pageFaults === 0 && followed > 0;
  const at = (run: Run) => fmt(median(results[run].map((result) => result.rps)));
  return [
    {
      line: `read at ${fmt(figures.plants)} plants: ${at("large")} vs ${at("small")} req/s at 2,000 plants = ${fmt(read, 2)}× (≥ 0.87, i.e. within 1.15×) → ${read >= BAR ? "met" : "NOT met"}`,
      met: read >= BAR,
    },
    {
      line: `page (following next, limit=20, half the walks by tag) at ${fmt(figures.plants)} plants: ${at("page")} vs ${at("small")} req/s for read at 2,000 plants = ${fmt(page, 2)}× (≥ 0.87, i.e. within 1.15×), errors and bad links ${pageFaults} → ${pageMet ? "met" : "NOT met"}`,
      met: pageMet,
    },
  ];
}
