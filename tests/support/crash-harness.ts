/**
 * Crash-safety harness: runs the real server on a file database, drives concurrent creates,
 * SIGKILLs the process after a random number of acknowledged writes, then opens the file
 * directly and checks that every acknowledged write survived exactly, that nothing that was
 * never sent (or was refused) is stored, and that SQLite's integrity check passes. The next
 * round restarts the server on the same file, so recovery from the WAL is exercised each time.
 */
import { Database } from "bun:sqlite";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "./process";

const ROOT = new URL("../..", import.meta.url).pathname;
const TOKEN_LINE = /^pst_[A-Za-z0-9_-]{43}$/m;
const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;
/** A request that takes this long means the server hangs; the round fails instead of waiting forever. */
const REQUEST_TIMEOUT_MS = 15_000;
/** Refusals before the kill mean the workload is wrong; stop early instead of looping. */
const MAX_REFUSALS = 20;

export interface CrashOptions {
  rounds: number;
  /** A folder for the database file; it must not already hold `crash.sqlite`. */
  dir: string;
  /** Receives one line per round and a few progress notes. */
  log?: (line: string) => void;
  /** Concurrent request loops per round (default 16). */
  workers?: number;
  /** The kill comes after K acknowledged creates, K uniform in 1..maxAcknowledged (default 250). */
  maxAcknowledged?: number;
  /** Seed for ids, names, tags and kill moments; printed so a failing run can be replayed. */
  seed?: number;
}

export interface CrashRoundResult {
  round: number;
  /** K: the kill was sent once this many creates had been acknowledged. */
  killAfter: number;
  sent: number;
  acknowledged: number;
  /** Sent but unanswered when the process died: may or may not be stored. */
  inDoubt: number;
  /** Of those, how many turned out to be stored (they must then hold exactly the data sent). */
  inDoubtStored: number;
  /** Answered with a status other than 200 before the kill (none expected). */
  refused: number;
  /** fetch failures before the kill, or the process dying on its own (none expected). */
  unexpected: number;
  /** 200 responses whose body was not the plant that was sent. */
  badEcho: number;
  rows: number;
  lost: number;
  phantom: number;
  corrupt: number;
  /** After the restart that opened this round: GET /plants differed from the file's rows. */
  servedMismatch: boolean;
  integrity: string;
}

export interface CrashSummary {
  rounds: number;
  seed: number;
  acknowledged: number;
  /** Distinct ids: acknowledged (or seen stored) earlier, missing later. */
  lost: number;
  /** Distinct ids: stored although never sent, refused, or seen absent after an earlier crash. */
  phantom: number;
  /** Distinct ids: stored with other data than was sent. */
  corrupt: number;
  /** "ok" when every round's `PRAGMA integrity_check` said so, else the first other answer. */
  integrity: string;
  inDoubt: number;
  inDoubtStored: number;
  refused: number;
  unexpected: number;
  badEcho: number;
  servedMismatches: number;
  /** The server restarted after the last crash, served the data and stopped with exit code 0. */
  finalRestart: string;
  perRound: CrashRoundResult[];
}

/** True when the run found nothing wrong. */
export function crashRunPassed(summary: CrashSummary): boolean {
  return crashRunProblems(summary).length === 0;
}

/** A sentence per kind of problem found; empty when the run passed. */
export function crashRunProblems(s: CrashSummary): string[] {
  const problems: string[] = [];
  if (s.lost > 0) problems.push(`${s.lost} acknowledged write(s) lost`);
  if (s.phantom > 0) problems.push(`${s.phantom} phantom row(s)`);
  if (s.corrupt > 0) problems.push(`${s.corrupt} row(s) with other data than sent`);
  if (s.integrity !== "ok") problems.push(`integrity check: ${s.integrity}`);
  if (s.refused > 0) problems.push(`${s.refused} create(s) refused before the kill`);
  if (s.unexpected > 0) problems.push(`${s.unexpected} unexpected failure(s) before the kill`);
  if (s.badEcho > 0) problems.push(`${s.badEcho} 200 response(s) with the wrong body`);
  if (s.servedMismatches > 0) problems.push(`${s.servedMismatches} restart(s) served other data than stored`);
  if (s.finalRestart !== "ok") problems.push(`final restart: ${s.finalRestart}`);
  if (s.acknowledged === 0 || s.perRound.some((round) => round.acknowledged === 0)) {
    problems.push("a round acknowledged no writes");
  }
  return problems;
}

/** mulberry32: small, fast, seedable. */
function randomSource(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (below: number) => Math.floor(next() * below) };
}

/** Pieces for names and tags: ASCII, JSON escapes, accents, combining marks, CJK, RTL, emoji (surrogate pairs, ZWJ). */
const PIECES = [
  "a",
  "Z",
  "7",
  " ",
  "-",
  '"',
  "\\",
  "/",
  "ü",
  "ß",
  "e\u0301",
  "漢字",
  "שלום",
  "ℌ",
  "🌵",
  "🌿",
  "👩‍🌾",
  "\u00a0",
  "\t",
];

type Outcome = "pending" | "acked" | "in-doubt" | "refused" | "stored" | "absent";

interface SentCreate {
  id: bigint;
  name: string;
  tag: string | undefined;
  round: number;
  outcome: Outcome;
}

interface StoredRow {
  owner_id: bigint;
  id: bigint;
  name: string;
  tag: string | null;
}

interface SpawnedServer {
  proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  url: string;
  startupOutput: string;
  /** All stdout and stderr, once the process has exited. */
  output(): Promise<string>;
}

/** Starts `bun src/index.ts` directly (so SIGKILL reaches the server itself, not a `bun run` parent). */
async function spawnServer(databasePath: string): Promise<SpawnedServer> {
  const proc = Bun.spawn(["bun", "src/index.ts"], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: "0",
      HOST: "127.0.0.1",
      DATABASE_URL: databasePath,
      DB_SYNCHRONOUS: "FULL",
      RATE_LIMIT_PER_MINUTE: "0",
    },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const stderr = new Response(proc.stderr).text();
  const reader = proc.stdout.getReader();
  const decoder = new TextDecoder();
  let stdout = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      throw new Error(`server exited before listening (code ${await proc.exited}): ${stdout}${await stderr}`);
    }
    stdout += decoder.decode(value, { stream: true });
    const match = /listening on (http:\/\/\S+)/.exec(stdout);
    if (match?.[1]) {
      const startupOutput = stdout;
      // Keep draining stdout so a full pipe can never block the server.
      const rest = (async () => {
        for (;;) {
          const chunk = await reader.read();
          if (chunk.done) return;
          stdout += decoder.decode(chunk.value, { stream: true });
        }
      })();
      return {
        proc,
        url: match[1],
        startupOutput,
        output: async () => {
          await Promise.all([proc.exited, rest]);
          return stdout + (await stderr);
        },
      };
    }
  }
}

function readFile(path: string): {
  integrity: string;
  rows: StoredRow[];
  userIdOf: (hash: string) => bigint | undefined;
} {
  const db = new Database(path, { readonly: true, safeIntegers: true });
  try {
    const integrity = db
      .query("PRAGMA integrity_check")
      .all()
      .map((row) => String(Object.values(row as Record<string, unknown>)[0]))
      .join("; ");
    const rows = db.query("SELECT owner_id, id, name, tag FROM plants").all() as StoredRow[];
    const owners = new Map(
      (db.query("SELECT hash, user_id FROM tokens").all() as Array<{ hash: string; user_id: bigint }>).map((row) => [
        row.hash,
        row.user_id,
      ]),
    );
    return { integrity, rows, userIdOf: (hash) => owners.get(hash) };
  } finally {
    db.close();
  }
}

const plantJson = (name: string, tag: string | undefined) => (tag === undefined ? { name } : { name, tag });

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export async function runCrashRounds(options: CrashOptions): Promise<CrashSummary> {
  const { rounds, dir, log = () => {}, workers = 16, maxAcknowledged = 250 } = options;
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 32);
  const random = randomSource(seed);
  const databasePath = join(dir, "crash.sqlite");
  if (existsSync(databasePath)) throw new Error(`${databasePath} already exists; give the harness a fresh folder`);
  log(`crash-test: seed ${seed}, database ${databasePath}`);

  // Ids: four families with their own counters, so neighbours such as 2^63-1 and 2^63-2 both occur.
  const counters = [0n, 0n, 0n, 0n];
  const nextId = (): bigint => {
    const family = random.int(4);
    const n = counters[family] ?? 0n;
    counters[family] = n + 1n;
    if (family === 0) return INT64_MAX - n;
    if (family === 1) return INT64_MIN + n;
    if (family === 2) return 2n ** 53n - 8n + n; // crosses the float-exact boundary
    return n % 2n === 0n ? n / 2n : -(n + 1n) / 2n; // 0, -1, 1, -2, ...
  };
  const text = (min: number) => {
    const length = min + random.int(12);
    let out = "";
    for (let i = 0; i < length; i++) out += PIECES[random.int(PIECES.length)];
    return out;
  };
  const nextTag = (): string | undefined => {
    const roll = random.next();
    if (roll < 0.3) return undefined;
    if (roll < 0.4) return ""; // an empty tag is a tag, not NULL
    return text(1);
  };

  const sent = new Map<string, SentCreate>();
  const lostIds = new Set<string>();
  const phantomIds = new Set<string>();
  const corruptIds = new Set<string>();
  const perRound: CrashRoundResult[] = [];
  let token: string | undefined;
  let ownerId: bigint | undefined;
  /** Rows the file must hold now, in id order, as the API shows them. */
  const expectedListing = () =>
    [...sent.values()]
      .filter((create) => create.outcome === "acked" || create.outcome === "stored")
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((create) => plantJson(create.name, create.tag));

  /** After a restart, the server must serve exactly what the file held after the crash. */
  const servedMatches = async (url: string) => {
    const response = await fetch(`${url}/plants`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    return response.status === 200 && sameJson(await response.json(), expectedListing());
  };

  for (let round = 1; round <= rounds; round++) {
    const server = await spawnServer(databasePath);
    let servedMismatch = false;
    if (token === undefined) {
      token = server.startupOutput.match(TOKEN_LINE)?.[0];
      if (token === undefined) {
        const created = await runCli(["token", "create", "--user", "crash"], { DATABASE_URL: databasePath });
        token = created.stdout.trimEnd().split("\n").at(-1);
        if (created.code !== 0 || !token || !TOKEN_LINE.test(token)) {
          server.proc.kill(9);
          throw new Error(`could not create a token: ${created.stdout}${created.stderr}`);
        }
      }
    } else {
      servedMismatch = !(await servedMatches(server.url));
    }

    const killAfter = 1 + random.int(maxAcknowledged);
    const figures = { sent: 0, acknowledged: 0, refused: 0, unexpected: 0, badEcho: 0 };
    const thisRound: SentCreate[] = [];
    let stopped = false;
    const stop = () => {
      if (stopped) return;
      stopped = true;
      server.proc.kill(9);
    };
    // Dying on its own is a failure; the loops must not keep sending into the void.
    void server.proc.exited.then(() => {
      if (!stopped) {
        figures.unexpected++;
        stopped = true;
      }
    });
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };

    const loop = async () => {
      while (!stopped) {
        const create: SentCreate = { id: nextId(), name: text(1), tag: nextTag(), round, outcome: "pending" };
        sent.set(create.id.toString(), create);
        thisRound.push(create);
        figures.sent++;
        // The id goes out as a bare JSON integer, digit for digit.
        const tagPart = create.tag === undefined ? "" : `,"tag":${JSON.stringify(create.tag)}`;
        const body = `{"id":${create.id},"name":${JSON.stringify(create.name)}${tagPart}}`;
        let response: Response;
        try {
          response = await fetch(`${server.url}/plants`, {
            method: "POST",
            headers,
            body,
            signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
          });
        } catch (error) {
          create.outcome = "in-doubt";
          if (!stopped) {
            figures.unexpected++;
            log(`round ${round}: request failed before the kill: ${(error as Error).message}`);
            stop();
          }
          return;
        }
        if (response.status === 200) {
          create.outcome = "acked";
          figures.acknowledged++;
          if (figures.acknowledged >= killAfter) stop();
          try {
            if (!sameJson(await response.json(), plantJson(create.name, create.tag))) figures.badEcho++;
          } catch {
            // The body can be cut off by the kill; the 200 status already acknowledged the write.
          }
        } else {
          create.outcome = "refused";
          figures.refused++;
          log(`round ${round}: create answered ${response.status}: ${await response.text().catch(() => "")}`);
          if (figures.refused >= MAX_REFUSALS) stop();
        }
      }
    };
    await Promise.all(Array.from({ length: workers }, loop));
    stop();
    await server.proc.exited;
    if (server.proc.signalCode !== "SIGKILL") {
      figures.unexpected++;
      log(`round ${round}: server exited by itself (code ${server.proc.exitCode}): ${await server.output()}`);
    }
    for (const create of thisRound) if (create.outcome === "pending") create.outcome = "in-doubt";

    // The process is gone: what the file holds now is what a crash leaves behind.
    const file = readFile(databasePath);
    ownerId ??= file.userIdOf(new Bun.CryptoHasher("sha256").update(token).digest("hex"));
    if (ownerId === undefined) throw new Error("the token's user is not in the database file");
    let lost = 0;
    let phantom = 0;
    let corrupt = 0;
    const seen = new Set<string>();
    for (const row of file.rows) {
      const key = row.id.toString();
      const create = sent.get(key);
      seen.add(key);
      if (!create || row.owner_id !== ownerId || create.outcome === "refused" || create.outcome === "absent") {
        phantom++;
        phantomIds.add(`${row.owner_id}/${key}`);
      } else if (row.name !== create.name || row.tag !== (create.tag ?? null)) {
        corrupt++;
        corruptIds.add(key);
      }
    }
    let inDoubt = 0;
    let inDoubtStored = 0;
    for (const [key, create] of sent) {
      if (create.outcome === "acked" || create.outcome === "stored") {
        if (!seen.has(key)) {
          lost++;
          lostIds.add(key);
        }
      } else if (create.outcome === "in-doubt") {
        // Decided now: once seen stored it must stay; once seen absent it must never appear.
        inDoubt++;
        if (seen.has(key)) inDoubtStored++;
        create.outcome = seen.has(key) ? "stored" : "absent";
      }
    }
    // Acknowledged creates of this round are held to the same rule from here on.
    for (const create of thisRound) if (create.outcome === "acked") create.outcome = "stored";

    const result: CrashRoundResult = {
      round,
      killAfter,
      ...figures,
      inDoubt,
      inDoubtStored,
      rows: file.rows.length,
      lost,
      phantom,
      corrupt,
      servedMismatch,
      integrity: file.integrity,
    };
    perRound.push(result);
    log(
      `round ${round}/${rounds}: kill after ${killAfter} acks; sent ${result.sent}, acknowledged ${result.acknowledged}, ` +
        `in doubt ${inDoubt} (stored ${inDoubtStored}), rows ${result.rows}; lost ${lost}, phantom ${phantom}, ` +
        `corrupt ${corrupt}, integrity ${file.integrity}` +
        (servedMismatch ? ", RESTART SERVED OTHER DATA" : "") +
        (figures.refused + figures.unexpected + figures.badEcho > 0
          ? `, refused ${figures.refused}, unexpected ${figures.unexpected}, bad echo ${figures.badEcho}`
          : ""),
    );
  }

  // One more start: recovery after the last crash must also come up cleanly and stop cleanly.
  let finalRestart = "ok";
  if (rounds > 0) {
    try {
      const server = await spawnServer(databasePath);
      const served = await servedMatches(server.url);
      server.proc.kill("SIGTERM");
      const code = await server.proc.exited;
      if (!served) finalRestart = "served other data than the file held";
      else if (code !== 0) finalRestart = `exit code ${code} after SIGTERM: ${await server.output()}`;
    } catch (error) {
      finalRestart = (error as Error).message;
    }
  }

  const sum = (pick: (round: CrashRoundResult) => number) => perRound.reduce((total, r) => total + pick(r), 0);
  return {
    rounds: perRound.length,
    seed,
    acknowledged: sum((r) => r.acknowledged),
    lost: lostIds.size,
    phantom: phantomIds.size,
    corrupt: corruptIds.size,
    integrity: perRound.find((r) => r.integrity !== "ok")?.integrity ?? "ok",
    inDoubt: sum((r) => r.inDoubt),
    inDoubtStored: sum((r) => r.inDoubtStored),
    refused: sum((r) => r.refused),
    unexpected: sum((r) => r.unexpected),
    badEcho: sum((r) => r.badEcho),
    servedMismatches: perRound.filter((r) => r.servedMismatch).length,
    finalRestart,
    perRound,
  };
}
