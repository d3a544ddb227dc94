import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import {
  chmodSync,
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { emptyPostgresDatabase, onPostgres } from "../support/helpers";
import { scratchDir } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { until } from "../support/until";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const ROOT = new URL("../..", import.meta.url).pathname;

let scratch: ReturnType<typeof scratchDir>;
/** The binary, built away from the repository (no drizzle/ or node_modules/ beside it, and no
 * other run's dist/ to race with: the suite runs on both engines at once). */
let binary: string;
/** The empty folder it runs in; the database is created here. */
let workdir: string;
let env: Record<string, string>;

beforeAll(async () => {
  scratch = scratchDir();
  mkdirSync(join(scratch.dir, "bin"));
  binary = join(scratch.dir, "bin", "plant-store");
  // The build script as it is, its output moved: bun build takes the last --outfile.
  const build = Bun.spawn(["bun", "run", "build", "--outfile", binary], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(build.stdout).text(),
    new Response(build.stderr).text(),
    build.exited,
  ]);
  if (code !== 0) throw new Error(`bun run build failed (${code}): ${stdout}${stderr}`);

  chmodSync(binary, 0o755);
  workdir = join(scratch.dir, "run");
  mkdirSync(workdir);
  env = { ...process.env, DATABASE_URL: join(workdir, "plants.sqlite"), RATE_LIMIT_PER_MINUTE: "0" } as Record<
    string,
    string
  >;
}, 120_000);

afterAll(() => scratch?.cleanup());

async function runBinary(args: string[], extra: Record<string, string> = {}) {
  const proc = Bun.spawn([binary, ...args], {
    cwd: workdir,
    env: { ...env, ...extra },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { stdout, stderr, code };
}

/**
 * Starts the binary with no arguments and waits until its output names the URL it listens
 * on. Matched loosely (a plain line or a JSON log line both carry the URL); both streams are
 * read to the end so a full pipe never blocks the server.
 */
async function startBinary(extra: Record<string, string> = {}) {
  const proc = Bun.spawn([binary], {
    cwd: workdir,
    env: { ...env, PORT: "0", HOST: "127.0.0.1", ...extra },
    stdout: "pipe",
    stderr: "pipe",
  });
  let output = "";
  let announce: (url: string) => void = () => {};
  const announced = new Promise<string>((resolve) => {
    announce = resolve;
  });
  const drain = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      output += decoder.decode(chunk, { stream: true });
      const match = /http:\/\/127\.0\.0\.1:(\d+)/.exec(output);
      if (match) announce(match[0]);
    }
  };
  const drained = Promise.all([drain(proc.stdout), drain(proc.stderr)]);
  const url = await Promise.race([
    announced,
    proc.exited.then((code) => {
      throw new Error(`the binary exited (${code}) before listening: ${output}`);
    }),
  ]);
  return {
    url,
    stop: async () => {
      proc.kill("SIGTERM");
      const code = await proc.exited;
      await drained;
      return { code, output };
    },
  };
}

describe("the compiled binary (bun run build → dist/plant-store)", () => {
  test("embeds its migrations and Swagger assets rather than pointing into the repository", () => {
    expect(readdirSync(workdir)).toEqual([]);
    const bytes = readFileSync(binary);
    expect(bytes.includes(join(ROOT, "drizzle"))).toBe(false);
    expect(bytes.includes(join(ROOT, "node_modules/swagger-ui-dist"))).toBe(false);
    expect(bytes.includes("CREATE TABLE `plants`")).toBe(true);
    expect(bytes.includes('CREATE TABLE "plants"')).toBe(true);
  });

  test.if(onPostgres)(
    "on PostgreSQL: migrates an empty database from its embedded migrations, checks it and serves",
    async () => {
      const postgres = { DATABASE_URL: await emptyPostgresDatabase() };
      const migrated = await runBinary(["migrate"], postgres);
      expect({ code: migrated.code, stderr: migrated.stderr }).toEqual({ code: 0, stderr: "" });
      const check = await runBinary(["check"], postgres);
      expect({ code: check.code, stderr: check.stderr }).toEqual({ code: 0, stderr: "" });
      expect(check.stdout).toContain("0 pending");
      const issued = await runBinary(["token", "create", "--user", "alice"], postgres);
      expect(issued.code).toBe(0);
      const auth = { authorization: `Bearer ${issued.stdout.trim().split("\n").at(-1)}` };
      const server = await startBinary(postgres);
      try {
        const created = await fetch(`${server.url}/plants`, {
          method: "POST",
          headers: { ...auth, "content-type": "application/json" },
          body: '{"id": -9223372036854775808, "name": "Fern"}',
        });
        expect(created.status).toBe(200);
        expect(await (await fetch(`${server.url}/plants/-9223372036854775808`, { headers: auth })).json()).toEqual({
          name: "Fern",
        });
        expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
      } finally {
        const { code, output } = await server.stop();
        expect(code).toBe(0);
        expect(output).toContain("Stopped cleanly");
      }
      // Nothing was written beside the binary: the data is in PostgreSQL.
      expect(readdirSync(workdir).filter((name) => name.startsWith("plants"))).toEqual([]);
    },
  );

  test.if(!onPostgres)("runs its integrity pass on a thread of its own: a damaged page turns /readyz 503", async () => {
    const damaged = { DATABASE_URL: join(scratch.dir, "damaged.sqlite") };
    expect((await runBinary(["migrate"], damaged)).code).toBe(0);
    // The plants table's page, which start-up never reads, overwritten with garbage.
    const sqlite = new Database(damaged.DATABASE_URL);
    const { rootpage } = sqlite.query("SELECT rootpage FROM sqlite_master WHERE name = 'plants'").get() as {
      rootpage: number;
    };
    const { page_size: pageSize } = sqlite.query("PRAGMA page_size").get() as { page_size: number };
    sqlite.run("PRAGMA wal_checkpoint(TRUNCATE)");
    sqlite.close(true);
    const file = openSync(damaged.DATABASE_URL, "r+");
    writeSync(file, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (rootpage - 1) * pageSize);
    closeSync(file);
    const server = await startBinary(damaged);
    try {
      await until(async () => (await fetch(`${server.url}/readyz`)).status, {
        holds: (status) => status === 503,
        what: "/readyz 503",
      });
    } finally {
      const { code, output } = await server.stop();
      expect(code).toBe(0);
      expect(output).toContain("the integrity check after start-up found damage");
    }
  });

  test("names itself in its usage text, as it was invoked", async () => {
    const help = await runBinary(["--help"]);
    expect({ code: help.code, stderr: help.stderr }).toEqual({ code: 0, stderr: "" });
    expect(help.stdout).toStartWith("Usage: plant-store <command>");
    expect(help.stdout).toContain(
      "  plant-store token create --user <name> [--scope <s>]... [--expires-in-days <n>]  ",
    );
    expect(help.stdout).not.toContain("bun run");

    const wrong = await runBinary(["token", "revoke"]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain("\n\nUsage: plant-store token revoke <token-id>\n");

    // Under another name (a symlink), that name.
    const alias = join(scratch.dir, "bin", "greenhouse");
    symlinkSync(binary, alias);
    const proc = Bun.spawn([alias, "token", "list", "--help"], { cwd: workdir, env, stdout: "pipe" });
    expect(await new Response(proc.stdout).text()).toStartWith("Usage: greenhouse token list\n");
    expect(await proc.exited).toBe(0);
  });

  test("runs the CLI with arguments and serves without, from an empty folder", async () => {
    const issued = await runBinary(["token", "create", "--user", "alice"]);
    expect(issued.code).toBe(0);
    const token = issued.stdout.trim().split("\n").at(-1) as string;
    expect(token).toMatch(/^pst_[A-Za-z0-9_-]{43}$/);

    const check = await runBinary(["check"]);
    expect(check.stderr).toBe("");
    expect(check.code).toBe(0);

    const server = await startBinary();
    try {
      const auth = { authorization: `Bearer ${token}` };
      const json = { ...auth, "content-type": "application/json" };
      const create = (body: unknown) =>
        fetch(`${server.url}/plants`, { method: "POST", headers: json, body: JSON.stringify(body) });

      const monstera = await create({ id: 1, name: "Monstera", tag: "tropical" });
      expect(monstera.status).toBe(200);
      expect(await monstera.json()).toEqual({ name: "Monstera", tag: "tropical" });
      const fern = await fetch(`${server.url}/plants`, {
        method: "POST",
        headers: json,
        body: '{"id": 9223372036854775807, "name": "Fern"}',
      });
      expect(fern.status).toBe(200);
      expect((await create({ id: 1, name: "Again" })).status).toBe(409);

      const listed = await fetch(`${server.url}/plants`, { headers: auth });
      expect(listed.status).toBe(200);
      expect(await listed.json()).toEqual([{ name: "Monstera", tag: "tropical" }, { name: "Fern" }]);

      const deleted = await fetch(`${server.url}/plants/1`, { method: "DELETE", headers: auth });
      expect(deleted.status).toBe(204);
      const after = await fetch(`${server.url}/plants?limit=10`, { headers: auth });
      expect(await after.json()).toEqual([{ name: "Fern" }]);
      expect((await fetch(`${server.url}/plants`)).status).toBe(401);

      const page = await fetch(`${server.url}/swagger`);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toStartWith("text/html");
      expect(await page.text()).toContain("/swagger/assets/swagger-ui-bundle.js");
      for (const [file, type] of [
        ["swagger-ui-bundle.js", "text/javascript"],
        ["swagger-ui.css", "text/css"],
      ] as const) {
        const asset = await fetch(`${server.url}/swagger/assets/${file}`);
        expect(asset.status).toBe(200);
        expect(asset.headers.get("content-type")).toStartWith(type);
        expect((await asset.arrayBuffer()).byteLength).toBe(
          statSync(join(ROOT, "node_modules/swagger-ui-dist", file)).size,
        );
      }
      const spec = await fetch(`${server.url}/swagger/json`);
      expect(spec.status).toBe(200);
      expect(((await spec.json()) as { openapi: string }).openapi).toStartWith("3.1");

      // Headers are capped at 16 KiB, as under `bun run start`.
      const padded = (size: number) =>
        fetch(`${server.url}/plants`, { headers: { ...auth, "x-padding": "a".repeat(size) } });
      expect((await padded(20_000)).status).toBe(431);
      expect((await padded(8_000)).status).toBe(200);
    } finally {
      const { code, output } = await server.stop();
      expect(code).toBe(0);
      expect(output).toContain("Stopped cleanly");
    }
  });
});
