/**
 * `bun run test`: installs the Debian packages the tests need, runs `bun test` on SQLite and,
 * at the same time, again with TEST_DATABASE=postgres against a throwaway cluster it starts and
 * stops around that run (each line of output names its engine when both run), and ends with
 * one line of its own, "N passed, M failed", summing both runs. Most of the PostgreSQL run's
 * time is spent waiting on servers and clusters, so side by side the two take little longer
 * than the PostgreSQL run alone.
 *
 *   bun run test [--engine sqlite|postgres|both] [bun test arguments] [-- bun test arguments]
 *
 * Plain `bun test` stays the fast SQLite-only loop.
 */
import { existsSync } from "node:fs";
import type { Subprocess } from "bun";
import { startCluster } from "./pg-cluster";
import { provision } from "./provision";

type Engine = "sqlite" | "postgres";
const CHOICES: Record<string, Engine[]> = { sqlite: ["sqlite"], postgres: ["postgres"], both: ["sqlite", "postgres"] };
const USAGE = "usage: bun run test [--engine sqlite|postgres|both] [-- bun test arguments]";
const SIGNAL_NUMBERS: Partial<Record<NodeJS.Signals, number>> = { SIGINT: 2, SIGTERM: 15 };

interface RunResult {
  passed: number;
  failed: number;
  ok: boolean;
}
const TEST_TIMEOUT_MS = 30_000;

/**
 * Test files that never touch the engine under test: their servers and CLI runs are on SQLite
 * files whatever the run, or they read documents and pure functions only. The PostgreSQL run
 * leaves them to the SQLite run, which they would only repeat (a minute of its time). A file
 * here must not ask which engine it is on; the run refuses to start if one does.
 */
const SQLITE_RUN_ONLY = [
  "tests/process/bench-patches.test.ts",
  "tests/process/browser.test.ts",
  "tests/process/crash.test.ts",
  "tests/process/full-disk.test.ts",
  "tests/process/hardening.test.ts",
  "tests/process/limits.test.ts",
  "tests/process/openapi-client.test.ts",
  "tests/process/openapi-file.test.ts",
  "tests/process/openapi-linters.test.ts",
  "tests/process/readme-webhooks.test.ts",
  "tests/process/server.test.ts",
  "tests/process/shutdown.test.ts",
  "tests/unit/client-address.test.ts",
  "tests/unit/config.test.ts",
  "tests/unit/change-feed.test.ts",
  "tests/unit/deadline.test.ts",
  "tests/unit/docs-links.test.ts",
  "tests/unit/groups.test.ts",
  "tests/unit/logger.test.ts",
  "tests/unit/plant-model.test.ts",
  "tests/unit/pruner.test.ts",
  "tests/unit/webhook-address.test.ts",
  "tests/unit/webhook-send.test.ts",
  "tests/unit/webhook-signing.test.ts",
  "tests/unit/webhook-waiting.test.ts",
];
/** What a file that does depend on the engine uses (tests/support/helpers.ts, webhook-servers.ts). */
const ENGINE_AWARE =
  /\b(ENGINE|onPostgres|onSqlite|makeTestApp|freshStores|TEST_DATABASE\w*|\w*Postgres\w*)\b|webhook-servers/;

/**
 * The files the PostgreSQL run gives bun test: every test file but SQLITE_RUN_ONLY's, unless the
 * arguments name files or folders of their own (then those, as given).
 */
async function postgresFiles(args: string[]): Promise<string[]> {
  if (args.some((arg) => !arg.startsWith("-") && existsSync(arg))) return [];
  const files: string[] = [];
  for await (const file of new Bun.Glob("tests/**/*.test.ts").scan(".")) {
    if (!SQLITE_RUN_ONLY.includes(file)) files.push(`./${file}`);
  }
  for (const file of SQLITE_RUN_ONLY) {
    if (ENGINE_AWARE.test(await Bun.file(file).text())) {
      throw new Error(`${file} asks which engine it is on: take it out of SQLITE_RUN_ONLY in scripts/test.ts`);
    }
  }
  return files.sort();
}
// A run that produced no summary of its own (setup failed, or bun test died) counts as one failure.
const NO_SUMMARY: RunResult = { passed: 0, failed: 1, ok: false };

function parseArgs(argv: string[]): { engines: Engine[]; passThrough: string[] } {
  let choice = "both";
  const passThrough: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === "--") {
      passThrough.push(...argv.slice(i + 1));
      break;
    }
    if (arg === "--engine") choice = argv[++i] ?? "";
    else if (arg.startsWith("--engine=")) choice = arg.slice("--engine=".length);
    else passThrough.push(arg);
  }
  const engines = CHOICES[choice];
  if (!engines) {
    console.error(`test: unknown engine "${choice}"; ${USAGE}`);
    process.exit(2);
  }
  return { engines, passThrough };
}

const children = new Set<Subprocess<"ignore", "pipe", "pipe">>();
let interrupted: NodeJS.Signals | undefined;

function onSignal(signal: NodeJS.Signals): void {
  // A second signal means bun test did not stop on the first: stop waiting for it.
  if (interrupted) {
    for (const child of children) child.kill("SIGKILL");
    return;
  }
  interrupted = signal;
  console.error(`test: ${signal}; stopping`);
  // From a terminal bun test gets the signal itself; from `kill <pid>` only we do.
  for (const child of children) child.kill(signal);
}

/** Copies `stream` to `out` whole lines at a time, each after `prefix`, and keeps its text. */
async function pump(
  stream: ReadableStream<Uint8Array>,
  out: NodeJS.WriteStream,
  text: string[],
  prefix: string,
): Promise<void> {
  const decoder = new TextDecoder();
  let partial = "";
  const emit = (chunk: string) => {
    text.push(chunk);
    const lines = (partial + chunk).split("\n");
    partial = lines.pop() as string;
    if (lines.length > 0) out.write(lines.map((line) => `${prefix}${line}\n`).join(""));
  };
  for await (const chunk of stream) emit(decoder.decode(chunk, { stream: true }));
  emit(decoder.decode());
  if (partial) out.write(`${prefix}${partial}\n`);
}

/** The last " N pass" and " N fail" lines of bun test's summary, as .ci/run read them. */
function parseSummary(output: string): { passed: number; failed: number } | undefined {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes start with ESC.
  const plain = output.replace(/\x1b\[[0-9;]*m/g, "");
  const last = (word: string) => [...plain.matchAll(new RegExp(`^ *(\\d+) ${word}$`, "gm"))].at(-1)?.[1];
  const passed = last("pass");
  if (passed === undefined) return undefined;
  return { passed: Number(passed), failed: Number(last("fail") ?? 0) };
}

async function bunTest(
  engine: Engine,
  env: Record<string, string | undefined>,
  args: string[],
  prefix: string,
): Promise<RunResult> {
  console.log(`\n${prefix}=== bun test on ${engine} ===`);
  const began = performance.now();
  // Real-process tests (servers, clusters, CLI runs) outlast bun's 5 s default on a busy machine.
  // setDefaultTimeout in the preload sets it for the first test file only (Bun 1.4.5), and
  // bunfig.toml has no such setting, so it is given here.
  const timeout = args.some((arg) => arg.startsWith("--timeout")) ? [] : [`--timeout=${TEST_TIMEOUT_MS}`];
  const child = Bun.spawn([process.execPath, "test", ...timeout, ...args], {
    env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  children.add(child);
  const text: string[] = [];
  const [, , code] = await Promise.all([
    pump(child.stdout, process.stdout, text, prefix),
    pump(child.stderr, process.stderr, text, prefix),
    child.exited,
  ]);
  children.delete(child);
  const seconds = ((performance.now() - began) / 1000).toFixed(2);
  const summary = parseSummary(text.join(""));
  if (!summary) {
    console.log(`${engine}: no test summary found in bun test's output (exit ${code}, ${seconds} s)`);
    return NO_SUMMARY;
  }
  console.log(`${engine}: ${summary.passed} pass, ${summary.failed} fail (exit ${code}, ${seconds} s)`);
  return { ...summary, ok: code === 0 };
}

function testEnv(extra: Record<string, string>): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...process.env, ...extra };
  if (!("TEST_DATABASE" in extra)) {
    delete env.TEST_DATABASE;
    delete env.TEST_DATABASE_URL;
  }
  // The full run digs deeper into hostile input than the fast loop (tests/support/hostile-arbitraries.ts).
  env.HOSTILE_RUNS ??= "300";
  // And it drives Swagger UI in Chromium, which the fast loop leaves out (tests/process/browser.test.ts;
  // on SQLite only, SQLITE_RUN_ONLY).
  env.TEST_BROWSER ??= "1";
  // Piped output loses bun test's colours; keep them when a person is watching.
  if (process.stdout.isTTY && env.NO_COLOR === undefined) env.FORCE_COLOR ??= "1";
  return env;
}

async function postgresRun(args: string[], prefix: string): Promise<RunResult> {
  const began = performance.now();
  let cluster: Awaited<ReturnType<typeof startCluster>>;
  try {
    cluster = await startCluster();
  } catch (error) {
    console.error(`test: postgres: ${(error as Error).message}`);
    return NO_SUMMARY;
  }
  console.log(`postgres: cluster ${cluster.url} started in ${Math.round(performance.now() - began)} ms`);
  try {
    if (interrupted) return NO_SUMMARY;
    const env = testEnv({ TEST_DATABASE: "postgres", TEST_DATABASE_URL: cluster.url });
    return await bunTest("postgres", env, [...args, ...(await postgresFiles(args))], prefix);
  } finally {
    const stopping = performance.now();
    await cluster.stop();
    console.log(`postgres: cluster stopped in ${Math.round(performance.now() - stopping)} ms`);
  }
}

async function main(): Promise<number> {
  const { engines, passThrough } = parseArgs(Bun.argv.slice(2));
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const results: RunResult[] = [];
  try {
    await provision({ postgres: engines.includes("postgres") });
    const prefix = (engine: Engine) => (engines.length > 1 ? `[${engine}] ` : "");
    const runs = engines.map((engine) =>
      engine === "sqlite"
        ? bunTest("sqlite", testEnv({}), passThrough, prefix(engine))
        : postgresRun(passThrough, prefix(engine)),
    );
    results.push(...(await Promise.all(runs)));
  } catch (error) {
    console.error(`test: ${(error as Error).message}`);
    results.push(NO_SUMMARY);
  }
  const passed = results.reduce((sum, result) => sum + result.passed, 0);
  const failed = results.reduce((sum, result) => sum + result.failed, 0);
  console.log(`${passed} passed, ${failed} failed`);
  process.off("SIGINT", onSignal);
  process.off("SIGTERM", onSignal);
  if (interrupted) return 128 + (SIGNAL_NUMBERS[interrupted] ?? 0);
  return results.length > 0 && results.every((result) => result.ok) ? 0 : 1;
}

process.exitCode = await main();
