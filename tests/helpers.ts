import { Database } from "bun:sqlite";
import { expect } from "bun:test";
import { type AppConfig, type AppOps, createApp, createOps, type FaultLog } from "../src/app";
import { createTokenStore } from "../src/auth/tokens";
import { openDatabase } from "../src/db/client";

export const BASE = "http://localhost";

/** A fresh app on its own migrated in-memory database; rate limiting off unless asked for. */
export function makeTestApp(
  options: Partial<AppConfig> & { now?: () => number; logWith?: (ops: AppOps) => FaultLog } = {},
) {
  const { sqlite, db } = openDatabase({ path: ":memory:", synchronous: "FULL" });
  const ops = createOps(db);
  const logged: Array<{ message: string; detail: unknown }> = [];
  const clock = options.now ?? Date.now;
  const app = createApp({
    db,
    config: {
      bodyLimitBytes: options.bodyLimitBytes ?? 64 * 1024,
      bodyTimeoutMs: options.bodyTimeoutMs ?? 10_000,
      rateLimitPerMinute: options.rateLimitPerMinute ?? 0,
      authFailuresPerMinute: options.authFailuresPerMinute ?? 0,
      maxInFlight: options.maxInFlight ?? 1024,
      writeLockTimeoutMs: options.writeLockTimeoutMs ?? 5_000,
      corsOrigins: options.corsOrigins ?? [],
      swaggerPersistAuthorization: options.swaggerPersistAuthorization ?? false,
    },
    clock,
    log: options.logWith?.(ops) ?? ((message, detail) => logged.push({ message, detail })),
    ops,
  });
  const tokens = createTokenStore(db, clock);

  /** Sends a request; `token` becomes the Authorization header, `json` the JSON body. */
  async function call(
    method: string,
    path: string,
    init: { token?: string; json?: unknown; body?: RequestInit["body"]; headers?: Record<string, string> } = {},
  ) {
    const headers: Record<string, string> = { ...init.headers };
    if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
    let body = init.body;
    if (init.json !== undefined) {
      body = typeof init.json === "string" ? init.json : JSON.stringify(init.json);
      headers["content-type"] ??= "application/json";
    }
    return app.handle(new Request(`${BASE}${path}`, { method, headers, body }));
  }

  return {
    app,
    sqlite,
    db,
    tokens,
    logged,
    ops,
    call,
    /** Creates a plant from raw JSON, so ids past 2^53 stay exact, and expects the 200. */
    async createPlant(id: string, name: string, token: string) {
      const response = await call("POST", "/plants", { token, json: `{"id":${id},"name":${JSON.stringify(name)}}` });
      expect(response.status).toBe(200);
    },
    /** Issues a token for `user` (created if needed) and returns the secret. */
    tokenFor: (user: string) => tokens.issue(user).token,
  };
}

export type TestApp = ReturnType<typeof makeTestApp>;

/**
 * An error response: the status, a JSON content type, and exactly the Error body's two fields
 * with a non-blank message. Returns the message.
 */
export async function expectError(response: Response, status: number): Promise<string> {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toMatch(/^application\/json\b/);
  const body = (await response.json()) as Record<string, unknown>;
  expect(Object.keys(body).sort()).toEqual(["error", "message"]);
  expect(body.error).toBe(status);
  expect(typeof body.message).toBe("string");
  expect((body.message as string).trim().length).toBeGreaterThan(0);
  return body.message as string;
}

/**
 * A database that is ours by its (empty) migrations table, with a plants table of another shape
 * in the way: the first migration fails on it.
 */
export function writeClashingDatabase(path: string): void {
  const clashing = new Database(path);
  clashing.run("CREATE TABLE __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)");
  clashing.run("CREATE TABLE plants (something_else TEXT)");
  clashing.run("INSERT INTO plants VALUES ('keep me')");
  clashing.close();
}
