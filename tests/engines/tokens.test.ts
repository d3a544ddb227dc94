import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { ALL_SCOPES, hashToken } from "../../src/core/tokens";
import { makeTestApp, onPostgres, onSqlite } from "../support/helpers";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { until } from "../support/until";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

describe("tokens", () => {
  test.if(onSqlite)("are pst_ plus 256 random bits, and only their SHA-256 hash is stored", async () => {
    const t = await makeTestApp();
    const issued = [await t.tokens.issue("alice"), await t.tokens.issue("alice"), await t.tokens.issue("bob")];
    for (const { token } of issued) expect(token).toMatch(/^pst_[A-Za-z0-9_-]{43}$/);
    expect(new Set(issued.map((i) => i.token)).size).toBe(3);

    const rows = t.sqlite.query("SELECT * FROM tokens ORDER BY id").all() as Array<Record<string, unknown>>;
    expect(rows.map((row) => row.hash)).toEqual(issued.map((i) => hashToken(i.token)));
    const stored = JSON.stringify(rows);
    for (const { token } of issued) expect(stored).not.toContain(token.slice(4));
    expect(hashToken("pst_x")).toBe(new Bun.CryptoHasher("sha256").update("pst_x").digest("hex"));
  });

  test("one user may hold several tokens and each sees the same plants", async () => {
    const t = await makeTestApp();
    const [a, b] = [await t.tokenFor("alice"), await t.tokenFor("alice")];
    expect((await t.call("POST", "/plants", { token: a, json: { id: 1, name: "Fern" } })).status).toBe(200);
    expect(await (await t.call("GET", "/plants", { token: b })).json()).toEqual([{ name: "Fern" }]);
  });

  test("bootstrap issues an admin token only while no token was ever issued", async () => {
    const t = await makeTestApp();
    const first = await t.tokens.bootstrap();
    expect(first?.user).toBe("admin");
    expect(await t.tokens.bootstrap()).toBeUndefined();
    await t.tokens.revoke(first?.id as number);
    expect(await t.tokens.bootstrap()).toBeUndefined();
  });

  test("revoke tells a revoked token and an unknown id apart", async () => {
    const t = await makeTestApp();
    const { id } = await t.tokens.issue("alice");
    expect(await t.tokens.revoke(id)).toBe("revoked");
    expect(await t.tokens.revoke(id)).toBe("already-revoked");
    expect(await t.tokens.revoke(id + 100)).toBe("not-found");
  });

  test("last use is recorded, at most once a minute per token, beside the request", async () => {
    let now = Date.UTC(2026, 0, 1);
    const t = await makeTestApp({ now: () => now });
    const token = await t.tokenFor("alice");
    const lastUsed = async () => (await t.tokens.list())[0]?.lastUsedAt?.getTime();
    // On SQLite a write's answer comes once its group commit is done, and so is every write
    // queued before it. On PostgreSQL the recording is a statement of its own beside the
    // request: wait for it to show.
    const expectLastUsed = async (expected: number) => {
      expect((await t.call("DELETE", "/plants/404", { token })).status).toBe(404);
      if (onPostgres) await until(lastUsed, { holds: (used) => used === expected, what: "last use to be recorded" });
      expect(await lastUsed()).toBe(expected);
    };
    expect(await lastUsed()).toBeUndefined();

    expect((await t.call("GET", "/plants", { token })).status).toBe(200);
    await expectLastUsed(now);
    const firstUse = now;
    now += 30_000;
    await t.call("GET", "/plants", { token });
    await expectLastUsed(firstUse);
    now += 30_000;
    await t.call("GET", "/plants", { token });
    await expectLastUsed(now);
  });

  test("list gives each token's id, user, name, scopes and times, in id order, revoked ones included", async () => {
    const cli = { name: "cli", scopes: ALL_SCOPES, expiresAt: null, lastUsedAt: null };
    let now = Date.UTC(2026, 0, 1, 12);
    const t = await makeTestApp({ now: () => now });
    const alice = await t.tokens.issue("alice");
    now += 1_000;
    const bob = await t.tokens.issue("bob");
    now += 1_000;
    expect(await t.tokens.revoke(alice.id)).toBe("revoked");
    expect(await t.tokens.list()).toEqual([
      { ...cli, id: alice.id, user: "alice", createdAt: new Date(now - 2_000), revokedAt: new Date(now) },
      { ...cli, id: bob.id, user: "bob", createdAt: new Date(now - 1_000), revokedAt: null },
    ]);
    // A second token for a known user joins that user, not a new one.
    const again = await t.tokens.issue("alice");
    expect((await t.tokens.list()).map(({ id, user }) => [id, user])).toEqual([
      [alice.id, "alice"],
      [bob.id, "bob"],
      [again.id, "alice"],
    ]);
  });

  test("user names are checked", async () => {
    const t = await makeTestApp();
    await expect(t.tokens.issue("has space")).rejects.toThrow(/user name/);
    await expect(t.tokens.issue("")).rejects.toThrow(/user name/);
    await expect(t.tokens.issue("x".repeat(65))).rejects.toThrow(/user name/);
  });
});
