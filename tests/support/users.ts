/**
 * The one way the tests get a user and a bearer token, whatever level they are at: on stores
 * (in-process tests, and makeTestApp's tokenFor), on a SQLite file (process tests that seed the
 * database before a server or the CLI opens it), through the CLI as an operator would, or the
 * token a server's first start prints.
 */
import { expect } from "bun:test";
import type { TokenStore } from "../../src/core/stores";
import { closeDatabase, openDatabase } from "../../src/db/sqlite/client";
import { createSqliteTokenStore } from "../../src/db/sqlite/tokens";
import { createWriter } from "../../src/db/sqlite/writer";
import { type RunningServer, runCli } from "./process";

/** A token as the API takes it. */
export const TOKEN_PATTERN = /^pst_[A-Za-z0-9_-]{43}$/;

export interface TestUser {
  name: string;
  /** The user's id in the database (a plant's owner_id). */
  id: number;
  token: string;
}

/** Issues a token for `name` (the user is created if needed) on `tokens`, and reads its user id by authenticating once (a last use). */
export async function userWithToken(tokens: TokenStore, name = "alice"): Promise<TestUser> {
  const { token } = await tokens.issue(name);
  const user = await tokens.authenticate(token);
  if (!user) throw new Error(`the token issued for ${name} does not authenticate`);
  return { name, id: user.id, token };
}

/** Users with tokens, issued in order on the SQLite database at `path` (migrated if new), which is closed again. */
export async function usersOnFile(path: string, names: string[] = ["alice"]): Promise<TestUser[]> {
  const { sqlite } = openDatabase({ path, synchronous: "FULL" });
  const writes = createWriter(sqlite, {});
  try {
    const tokens = createSqliteTokenStore(sqlite, writes);
    const users: TestUser[] = [];
    for (const name of names) users.push(await userWithToken(tokens, name));
    return users;
  } finally {
    await writes.close();
    closeDatabase(sqlite);
  }
}

/** A token for `name` from `bun run cli token create`, as an operator makes one: the last line printed. */
export async function userFromCli(env: Record<string, string>, name: string): Promise<string> {
  const created = await runCli(["token", "create", "--user", name], env);
  expect(created.code).toBe(0);
  const token = created.stdout.trimEnd().split("\n").at(-1) ?? "";
  expect(token).toMatch(TOKEN_PATTERN);
  return token;
}

/** The token a server's first start prints for its admin (alone on a line, or inside a JSON log line). */
export function bootstrapToken(server: RunningServer): string {
  const token = printedToken(server);
  if (!token) throw new Error(`no bootstrap token in the server's start-up output: ${server.startupOutput}`);
  return token;
}

/** The first token a server printed at start, if it printed one (of instances started at once, one does). */
export function printedToken(server: RunningServer): string | undefined {
  return /pst_[A-Za-z0-9_-]{43}/.exec(server.startupOutput)?.[0];
}
