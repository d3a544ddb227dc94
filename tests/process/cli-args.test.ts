import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { openDatabase } from "../../src/db/sqlite/client";
import { createSqliteTokenStore } from "../../src/db/sqlite/tokens";
import { createWriter } from "../../src/db/sqlite/writer";
import { onSqlite } from "../support/helpers";
import { runToExit, scratchDir } from "../support/process";
import { CLI_FAN_OUT_TIMEOUT_MS } from "../support/timeouts";
import { usersOnFile } from "../support/users";

setDefaultTimeout(CLI_FAN_OUT_TIMEOUT_MS);

let scratch: ReturnType<typeof scratchDir>;
let env: Record<string, string>;
beforeEach(async () => {
  scratch = scratchDir();
  env = { DATABASE_URL: join(scratch.dir, "plants.sqlite") };
});
afterEach(() => scratch.cleanup());

/** `bun run cli` as an operator runs it; --silent keeps bun's own "$ command" line out of stderr. */
const cli = (...args: string[]) => runToExit(["bun", "run", "--silent", "cli", ...args], { env });

const firstLine = (text: string) => text.split("\n")[0];

/** Three tokens, ids 1 to 3, issued straight into the database. */
async function seedTokens() {
  await usersOnFile(env.DATABASE_URL as string, ["alice", "bob", "carol"]);
}

async function tokenStatuses(): Promise<string[]> {
  const { sqlite } = openDatabase({ path: env.DATABASE_URL as string, synchronous: "FULL" });
  const statuses = (await createSqliteTokenStore(sqlite, createWriter(sqlite, {})).list()).map(
    (row) => `${row.id} ${row.user} ${row.revokedAt ? "revoked" : "active"}`,
  );
  sqlite.close();
  return statuses;
}

// The CLI runs on a SQLite file here, and the tokens are seeded and read straight from it.
describe.if(onSqlite)("bun run cli: arguments", () => {
  test("token create takes --user=<name> as well as --user <name>; the token is the last line", async () => {
    const joined = await cli("token", "create", "--user=bob");
    expect(joined.stderr).toBe("");
    expect(joined.code).toBe(0);
    expect(joined.stdout.trimEnd().split("\n").at(-1)).toMatch(/^pst_[A-Za-z0-9_-]{43}$/);
    expect(joined.stdout).toContain('for user "bob"');
    expect(await tokenStatuses()).toEqual(["1 bob active"]);
  });

  test("a repeated --user is a usage error naming the option, and nothing is created", async () => {
    const results = await Promise.all([
      cli("token", "create", "--user", "alice", "--user", "bob"),
      cli("token", "create", "--user=alice", "--user=alice"),
    ]);
    for (const { stdout, stderr, code } of results) {
      expect(code).toBe(2);
      expect(stdout).toBe("");
      expect(firstLine(stderr)).toBe("plant-store: --user was given more than once; give it once");
    }
    expect(await tokenStatuses()).toEqual([]);
  });

  test("token revoke wants a canonical positive integer id and tells a bad one from a missing one", async () => {
    await seedTokens();
    const bad = ["abc", "00003", "-1", "3.0", "", "0", "9007199254740993"];
    const results = await Promise.all(bad.map((id) => cli("token", "revoke", id)));
    results.forEach(({ stdout, stderr, code }, index) => {
      expect({ id: bad[index], code, stdout, first: firstLine(stderr) }).toEqual({
        id: bad[index],
        code: 2,
        stdout: "",
        first: "plant-store: token id must be a positive integer such as 3",
      });
    });
    const missing = await cli("token", "revoke");
    expect(missing.code).toBe(2);
    expect(firstLine(missing.stderr)).toBe("plant-store: token revoke needs a token id (see token list)");
    expect(await tokenStatuses()).toEqual(["1 alice active", "2 bob active", "3 carol active"]);

    const revoked = await cli("token", "revoke", "3");
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toBe("Token 3 revoked.\n");
    expect(await tokenStatuses()).toEqual(["1 alice active", "2 bob active", "3 carol revoked"]);
  });

  test("--help and -h print the usage, named as invoked, with exit 0, at the top and for each command", async () => {
    const cases = [["--help"], ["-h"], ["token", "--help"], ["token", "create", "--help"], ["token", "revoke", "-h"]];
    const results = await Promise.all(cases.map((args) => cli(...args)));
    for (const { stderr, code } of results) expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    const [top, short, token, create, revoke] = results.map((result) => result.stdout);
    expect(short).toBe(top as string);
    expect(top).toStartWith("Usage: bun run cli <command>");
    const createSynopsis = "token create --user <name> [--scope <s>]... [--expires-in-days <n>]";
    for (const synopsis of [createSynopsis, "token list", "token revoke <token-id>", "backup <file>"]) {
      expect(top).toContain(`  bun run cli ${synopsis}  `);
    }
    expect(token).toContain("bun run cli token revoke <token-id>");
    expect(token).not.toContain("backup");
    expect(create).toStartWith(`Usage: bun run cli ${createSynopsis}\n`);
    expect(create).toContain("--user=<name>");
    expect(create).toContain("--scope <s>, once per scope");
    expect(revoke).toStartWith("Usage: bun run cli token revoke <token-id>\n");
  });

  test("unknown options and stray arguments are usage errors that name them, never a secret-looking value", async () => {
    const secret = `pst_${"A".repeat(43)}`;
    const [option, inline, stray, secretStray, secretOption] = await Promise.all([
      cli("token", "list", "--all"),
      cli("token", "create", "--user", "bob", `--token=${secret}`),
      cli("token", "list", "extra"),
      cli("token", "create", "--user", "bob", secret),
      cli("check", `--${secret}`),
    ]);
    expect(firstLine(option.stderr)).toBe('plant-store: unknown option "--all"');
    expect(firstLine(inline.stderr)).toBe('plant-store: unknown option "--token"');
    expect(firstLine(stray.stderr)).toBe('plant-store: unexpected argument "extra"');
    expect(firstLine(secretStray.stderr)).toBe(
      "plant-store: unexpected argument of 47 characters (not repeated here: it may be a secret)",
    );
    expect(firstLine(secretOption.stderr)).toBe(
      "plant-store: unknown option of 49 characters (not repeated here: it may be a secret)",
    );
    for (const { stdout, stderr, code } of [option, inline, stray, secretStray, secretOption]) {
      expect(code).toBe(2);
      expect(stdout).toBe("");
      expect(stderr).not.toContain("AAAA");
    }
    // The usage that follows is the command's own.
    expect(option.stderr).toContain("\n\nUsage: bun run cli token list\n");
    expect(await tokenStatuses()).toEqual([]);
  });
});
