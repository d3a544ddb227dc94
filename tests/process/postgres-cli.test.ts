import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SQL } from "bun";
import { withoutPassword } from "../../src/config";
import { EMBEDDED_MIGRATIONS } from "../../src/db/postgres/client";
import { emptyPostgresDatabase, freshPostgresDatabase, onPostgres } from "../support/helpers";
import { runToExit, scratchDir } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

/*
 * The operator's commands on PostgreSQL, run as a user would: `bun run cli ...` with
 * DATABASE_URL=postgres://... (SQLite's are in ops-cli.test.ts and server.test.ts).
 */

let scratch: ReturnType<typeof scratchDir>;
beforeEach(() => {
  scratch = scratchDir();
});
afterEach(() => scratch.cleanup());

/** `--silent` keeps bun's own "$ command" and "exited with code" lines out of stderr. */
const runScript = (script: string, args: string[], env: Record<string, string>) =>
  runToExit(["bun", "run", "--silent", script, ...args], { env });
const cli = (args: string[], databaseUrl: string, env: Record<string, string> = {}) =>
  runScript("cli", args, { DATABASE_URL: databaseUrl, ...env });
const lines = (text: string) => text.trim().split("\n").filter(Boolean);
const TAGS = EMBEDDED_MIGRATIONS.map((migration) => migration.tag);
const TOKEN = /^pst_[A-Za-z0-9_-]{43}$/;

/** Runs `use` on one connection to `url`, closed afterwards. */
async function withSql<T>(url: string, use: (sql: SQL) => Promise<T>): Promise<T> {
  const sql = new SQL(url, { max: 1 });
  try {
    return await use(sql);
  } finally {
    await sql.close();
  }
}

/** Every table outside PostgreSQL's own schemas, as schema.table, and the schemas themselves. */
function contentsOf(url: string) {
  return withSql(url, async (sql) => ({
    schemas: (
      (await sql`
      SELECT nspname FROM pg_namespace
      WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema' ORDER BY 1`) as Array<{ nspname: string }>
    ).map((row) => row.nspname),
    tables: (
      (await sql`
      SELECT table_schema || '.' || table_name AS name FROM information_schema.tables
      WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`) as Array<{ name: string }>
    ).map((row) => row.name),
  }));
}

const EMPTY = { schemas: ["public"], tables: [] };
const MIGRATED = {
  schemas: ["drizzle", "public"],
  tables: [
    "drizzle.__drizzle_migrations",
    "public.idempotency_keys",
    "public.plant_change_inbox",
    "public.plant_changes",
    "public.plants",
    "public.rate_limits",
    "public.tokens",
    "public.users",
    "public.webhook_attempts",
    "public.webhook_deliveries",
    "public.webhooks",
  ],
};

/** An empty database with someone else's plants table in it. */
async function foreignDatabase(): Promise<string> {
  const url = await emptyPostgresDatabase();
  await withSql(url, async (sql) => {
    await sql`CREATE TABLE plants (something_else text)`;
    await sql`INSERT INTO plants VALUES ('keep me')`;
  });
  return url;
}

/** A PATH on which bun is found and pg_dump is not. */
function pathWithoutPgDump(): string {
  const bin = join(scratch.dir, "bin");
  if (!existsSync(bin)) {
    mkdirSync(bin);
    symlinkSync(process.execPath, join(bin, "bun"));
  }
  return bin;
}

const EVERY_SCOPE = "(plants:read plants:write webhooks tokens; never expires)";

describe.if(onPostgres)("bun run cli token on PostgreSQL", () => {
  test("create, list and revoke: secrets shown once and never listed, revoked tokens shown as revoked", async () => {
    const url = await freshPostgresDatabase();
    const alice = await cli(["token", "create", "--user", "alice"], url);
    expect(alice.stderr).toBe("");
    expect(alice.code).toBe(0);
    const [aliceSays, aliceToken] = lines(alice.stdout);
    expect(aliceSays).toBe(`Created token 1 for user "alice" ${EVERY_SCOPE}. It is shown only this once:`);
    expect(aliceToken).toMatch(TOKEN);
    const bob = await cli(["token", "create", "--user=bob"], url);
    expect(lines(bob.stdout)).toEqual([
      `Created token 2 for user "bob" ${EVERY_SCOPE}. It is shown only this once:`,
      expect.any(String),
    ]);

    const listed = await cli(["token", "list"], url);
    expect(listed.code).toBe(0);
    expect(listed.stdout).not.toMatch(/pst_/);
    expect(lines(listed.stdout)).toEqual([
      expect.stringMatching(/^ID +USER +NAME +SCOPES +CREATED +EXPIRES +LAST USED +STATUS$/),
      expect.stringMatching(
        /^1 +alice +cli +plants:read plants:write webhooks tokens +\d{4}-\d\d-\d\dT[\d:.]+Z +- +- +active$/,
      ),
      expect.stringMatching(
        /^2 +bob +cli +plants:read plants:write webhooks tokens +\d{4}-\d\d-\d\dT[\d:.]+Z +- +- +active$/,
      ),
    ]);

    expect(lines((await cli(["token", "revoke", "1"], url)).stdout)).toEqual(["Token 1 revoked."]);
    expect(lines((await cli(["token", "revoke", "1"], url)).stdout)).toEqual(["Token 1 was already revoked."]);
    const missing = await cli(["token", "revoke", "99"], url);
    expect(missing.code).toBe(1);
    expect(lines(missing.stderr)).toEqual(["plant-store: no token with id 99"]);

    const after = await cli(["token", "list"], url);
    expect(after.stdout).not.toMatch(/pst_/);
    expect(lines(after.stdout).slice(1)).toEqual([
      expect.stringMatching(/^1 +alice +cli +[a-z: ]+ +\S+ +- +- +revoked \d{4}-\d\d-\d\dT[\d:.]+Z$/),
      expect.stringMatching(/^2 +bob +cli +[a-z: ]+ +\S+ +- +- +active$/),
    ]);
    // The database holds the hash of each secret, never the secret.
    const stored = await withSql(url, (sql) => sql`SELECT hash FROM tokens ORDER BY id`);
    expect(JSON.stringify(stored)).not.toContain(aliceToken);
  });

  test("token create on an empty database brings the schema up first", async () => {
    const url = await emptyPostgresDatabase();
    const created = await cli(["token", "create", "--user", "alice"], url);
    expect(created.code).toBe(0);
    expect(lines(created.stdout).at(-1)).toMatch(TOKEN);
    expect(await contentsOf(url)).toEqual(MIGRATED);
  });
});

describe.if(onPostgres)("bun run cli check on PostgreSQL", () => {
  test("a migrated database: every line, exit 0", async () => {
    const url = await freshPostgresDatabase();
    expect((await cli(["token", "create", "--user", "alice"], url)).code).toBe(0);
    const version = await withSql(url, async (sql) => {
      const [row] = (await sql`SELECT current_setting('server_version') AS version`) as [{ version: string }];
      return row.version;
    });
    const { stdout, stderr, code } = await cli(["check"], url);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(lines(stdout)).toEqual([
      `Checked ${url}`,
      `Connected: PostgreSQL ${version}`,
      "Table idempotency_keys: 0 rows",
      "Table plant_change_inbox: 0 rows",
      "Table plant_changes: 0 rows",
      "Table plants: 0 rows",
      "Table rate_limits: 0 rows",
      "Table tokens: 1 row",
      "Table users: 1 row",
      "Table webhook_attempts: 0 rows",
      "Table webhook_deliveries: 0 rows",
      "Table webhooks: 0 rows",
      "Constraints: all validated",
      `Migrations: ${TAGS.length} applied, 0 pending`,
      "All checks passed.",
    ]);
    // Every table the migrations made is checked, whether or not the Drizzle schema declares it.
    const checked = lines(stdout).flatMap((line) => /^Table (\w+):/.exec(line)?.[1] ?? []);
    const made = (await contentsOf(url)).tables.filter((table) => table.startsWith("public."));
    expect(checked.map((table) => `public.${table}`)).toEqual(made);
  });

  test("an empty database: every migration reported pending, exit 1, no table created", async () => {
    const url = await emptyPostgresDatabase();
    const { stdout, stderr, code } = await cli(["check"], url);
    expect(code).toBe(1);
    expect(lines(stdout)).toContain(`Migrations: 0 applied, ${TAGS.length} pending (${TAGS.join(", ")})`);
    expect(lines(stderr)).toEqual([
      ...[
        "idempotency_keys",
        "plant_change_inbox",
        "plant_changes",
        "plants",
        "rate_limits",
        "tokens",
        "users",
        "webhook_attempts",
        "webhook_deliveries",
        "webhooks",
      ].map((table) => `plant-store: table ${table} is missing or cannot be read`),
      `plant-store: ${TAGS.length} migrations pending`,
    ]);
    expect(lines(stdout).at(-1)).toBe("11 problems found.");
    expect(await contentsOf(url)).toEqual(EMPTY);
  });
});

describe.if(onPostgres)("bun run cli migrate and bun run db:migrate on PostgreSQL", () => {
  for (const [first, second] of [
    ["cli migrate", "db:migrate"],
    ["db:migrate", "cli migrate"],
  ] as const) {
    test(`${first} creates the schema in an empty database; ${second} then finds it up to date`, async () => {
      const url = await emptyPostgresDatabase();
      const run = (how: string) =>
        how === "db:migrate" ? runScript("db:migrate", [], { DATABASE_URL: url }) : cli(["migrate"], url);
      const applied = await run(first);
      expect(applied.stderr).toBe("");
      expect(applied.code).toBe(0);
      expect(lines(applied.stdout)).toEqual([`Applied ${TAGS.length} migrations to ${url}: ${TAGS.join(", ")}`]);
      expect(await contentsOf(url)).toEqual(MIGRATED);

      const again = await run(second);
      expect(again.code).toBe(0);
      expect(lines(again.stdout)).toEqual([`${url} is up to date: no pending migrations.`]);
      expect((await cli(["check"], url)).code).toBe(0);
    });
  }

  for (const args of [["migrate"], ["token", "create", "--user", "alice"]]) {
    test(`${args.join(" ")} refuses a database with a foreign plants table and leaves it as it was`, async () => {
      const url = await foreignDatabase();
      const { stdout, stderr, code } = await cli(args, url);
      expect(code).toBe(1);
      expect(stdout).toBe("");
      expect(lines(stderr)).toEqual([
        "plant-store: the database holds a plants table but no Plant Store migrations: it is not ours; give DATABASE_URL an empty database",
      ]);
      expect(await contentsOf(url)).toEqual({ schemas: ["public"], tables: ["public.plants"] });
      expect(await withSql(url, (sql) => sql`SELECT * FROM plants`)).toEqual([{ something_else: "keep me" }]);
    });
  }
});

describe.if(onPostgres)("bun run cli backup <file> on PostgreSQL", () => {
  test("with pg_dump on PATH: a custom-format dump that restores to the same rows", async () => {
    const url = await freshPostgresDatabase();
    expect((await cli(["token", "create", "--user", "alice"], url)).code).toBe(0);
    await withSql(url, async (sql) => {
      await sql`INSERT INTO plants (owner_id, id, name, tag) VALUES
        (1, 9223372036854775807, 'Fern', NULL), (1, -9223372036854775808, 'Cactus', 'desert')`;
    });
    const file = join(scratch.dir, "plants.dump");
    const { stdout, stderr, code } = await cli(["backup", file], url);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(lines(stdout)).toEqual([
      `Running: pg_dump --format=custom --file=${file} --dbname '${url}'`,
      `Backup written to ${file}`,
    ]);

    const listing = await runToExit(["pg_restore", "--list", file]);
    expect(listing.code).toBe(0);
    for (const table of ["plants", "tokens", "users", "rate_limits", "__drizzle_migrations"]) {
      expect(listing.stdout).toMatch(new RegExp(`TABLE DATA \\w+ ${table} `));
    }
    const restored = await emptyPostgresDatabase();
    const restore = await runToExit(["pg_restore", "--exit-on-error", "--dbname", restored, file]);
    expect(restore.stderr).toBe("");
    expect(restore.code).toBe(0);
    const rows = (target: string) =>
      withSql(target, async (sql) => ({
        plants: await sql`SELECT owner_id, id::text, name, tag FROM plants ORDER BY id`,
        tokens: await sql`SELECT id, user_id, hash, created_at FROM tokens ORDER BY id`,
        migrations: await sql`SELECT hash, created_at FROM drizzle.__drizzle_migrations ORDER BY id`,
      }));
    const original = await rows(url);
    expect(original.plants).toHaveLength(2);
    expect(await rows(restored)).toEqual(original);
    expect((await cli(["check"], restored)).code).toBe(0);
  });

  test("refuses a file that exists and leaves it as it was", async () => {
    const url = await freshPostgresDatabase();
    const file = join(scratch.dir, "precious.txt");
    writeFileSync(file, "not to be overwritten");
    const { stdout, stderr, code } = await cli(["backup", file], url);
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(lines(stderr)).toEqual([`plant-store: backup not written: ${file} already exists`]);
    expect(readFileSync(file, "utf8")).toBe("not to be overwritten");
  });

  test("without pg_dump on PATH: prints the pg_dump command to run, exit 1, no file", async () => {
    const url = await freshPostgresDatabase();
    const file = join(scratch.dir, "plants.dump");
    const { stdout, code } = await cli(["backup", file], url, { PATH: pathWithoutPgDump() });
    expect(code).toBe(1);
    expect(lines(stdout)).toEqual([
      "On PostgreSQL, back up with pg_dump (not found on PATH here):",
      `  pg_dump --format=custom --file=${file} --dbname '${url}'`,
      "Restore with: pg_restore --dbname <empty database> <file>",
    ]);
    expect(existsSync(file)).toBe(false);
  });
});

describe.if(onPostgres)("a password in DATABASE_URL", () => {
  test("backup hands it to pg_dump in PGPASSWORD, never on its command line (which ps shows to every local user)", async () => {
    const url = new URL(await freshPostgresDatabase());
    url.password = encodeURIComponent("pa ss/word");
    // A pg_dump that records what it was given, on a PATH that still finds bun.
    const bin = pathWithoutPgDump();
    const record = join(scratch.dir, "pg_dump.args");
    writeFileSync(
      join(bin, "pg_dump"),
      `#!/bin/sh\nprintf '%s\\n' "$@" > '${record}'\nprintf 'PGPASSWORD=%s\\n' "$PGPASSWORD" >> '${record}'\n`,
      { mode: 0o755 },
    );
    try {
      const { code } = await cli(["backup", join(scratch.dir, "fake.dump")], url.toString(), { PATH: bin });
      expect(code).toBe(0);
      const given = readFileSync(record, "utf8").trimEnd().split("\n");
      expect(given.at(-1)).toBe("PGPASSWORD=pa ss/word");
      const argv = given.slice(0, -1).join(" ");
      expect(argv).not.toContain("ss/word");
      expect(argv).not.toContain("ss%2Fword");
      expect(argv).toContain(`--dbname ${Object.assign(new URL(url), { password: "" })}`);
    } finally {
      rmSync(join(bin, "pg_dump"));
    }
  });

  test("never appears in what any command prints, on success or failure", async () => {
    const role = `plantstore_${process.pid}`;
    // Characters that must be percent-encoded in a URL: neither form may be printed.
    const password = `S3cret/${crypto.randomUUID()}@x`;
    const encoded = encodeURIComponent(password);
    const admin = process.env.TEST_DATABASE_URL as string;
    const target = new URL(await emptyPostgresDatabase());
    await withSql(admin, async (sql) => {
      await sql.unsafe(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
      await sql.unsafe(`ALTER DATABASE ${target.pathname.slice(1)} OWNER TO ${role}`);
    });
    target.username = role;
    target.password = encoded;
    const url = target.toString();
    expect(url).toContain(encoded);
    const shown = withoutPassword(url);
    const elsewhere = (database: string) => Object.assign(new URL(url), { pathname: `/${database}` }).toString();
    const closed = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const closedPort = closed.port;
    closed.stop(true);
    const unreachable = Object.assign(new URL(url), { port: String(closedPort) }).toString();
    const existing = join(scratch.dir, "existing.dump");
    writeFileSync(existing, "");

    const runs: Array<[string[], string, Record<string, string>?]> = [
      [["check"], url],
      [["migrate"], url],
      [["token", "create", "--user", "alice"], url],
      [["token", "list"], url],
      [["token", "revoke", "1"], url],
      [["check"], url],
      [["backup", join(scratch.dir, "plants.dump")], url],
      [["backup", existing], url],
      [["backup", join(scratch.dir, "other.dump")], url, { PATH: pathWithoutPgDump() }],
      [["backup", join(scratch.dir, "missing.dump")], elsewhere("no_such_database")],
      [["check"], elsewhere("no_such_database")],
      [["token", "list"], unreachable, { DB_CONNECT_TIMEOUT_MS: "500" }],
      [["migrate"], unreachable, { DB_CONNECT_TIMEOUT_MS: "500" }],
    ];
    const outputs: string[] = [];
    for (const [args, databaseUrl, env] of runs) {
      const { stdout, stderr, code } = await cli(args, databaseUrl, env);
      outputs.push(`$ ${args.join(" ")} (exit ${code})\n${stdout}${stderr}`);
    }
    const all = outputs.join("\n");
    expect(all).toContain(shown);
    expect(all).toContain("cannot use the database at");
    expect(all).toContain("pg_dump failed");
    expect(all).not.toContain(password);
    expect(all).not.toContain(encoded);
    expect(all).not.toContain(encoded.slice(0, 12));
    expect(all).not.toContain(password.slice(0, 12));
  });
});
