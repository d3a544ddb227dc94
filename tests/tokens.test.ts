import { describe, expect, test } from "bun:test";
import { hashToken } from "../src/auth/tokens";
import { makeTestApp } from "./helpers";

describe("tokens", () => {
  test("are pst_ plus 256 random bits, and only their SHA-256 hash is stored", () => {
    const t = makeTestApp();
    const issued = [t.tokens.issue("alice"), t.tokens.issue("alice"), t.tokens.issue("bob")];
    for (const { token } of issued) expect(token).toMatch(/^pst_[A-Za-z0-9_-]{43}$/);
    expect(new Set(issued.map((i) => i.token)).size).toBe(3);

    const rows = t.sqlite.query("SELECT * FROM tokens ORDER BY id").all() as Array<Record<string, unknown>>;
    expect(rows.map((row) => row.hash)).toEqual(issued.map((i) => hashToken(i.token)));
    const stored = JSON.stringify(rows);
    for (const { token } of issued) expect(stored).not.toContain(token.slice(4));
    expect(hashToken("pst_x")).toBe(new Bun.CryptoHasher("sha256").update("pst_x").digest("hex"));
  });

  test("one user may hold several tokens and each sees the same plants", async () => {
    const t = makeTestApp();
    const [a, b] = [t.tokenFor("alice"), t.tokenFor("alice")];
    expect((await t.call("POST", "/plants", { token: a, json: { id: 1, name: "Fern" } })).status).toBe(200);
    expect(await (await t.call("GET", "/plants", { token: b })).json()).toEqual([{ name: "Fern" }]);
  });

  test("bootstrap issues an admin token only while no token was ever issued", () => {
    const t = makeTestApp();
    const first = t.tokens.bootstrap();
    expect(first?.user).toBe("admin");
    expect(t.tokens.bootstrap()).toBeUndefined();
    t.tokens.revoke(first?.id as number);
    expect(t.tokens.bootstrap()).toBeUndefined();
  });

  test("revoke tells a revoked token and an unknown id apart", () => {
    const t = makeTestApp();
    const { id } = t.tokens.issue("alice");
    expect(t.tokens.revoke(id)).toBe("revoked");
    expect(t.tokens.revoke(id)).toBe("already-revoked");
    expect(t.tokens.revoke(id + 100)).toBe("not-found");
  });

  test("last use is recorded, at most once a minute per token, beside the request", async () => {
    let now = Date.UTC(2026, 0, 1);
    const t = makeTestApp({ now: () => now });
    const token = t.tokenFor("alice");
    const lastUsed = () => t.tokens.list()[0]?.lastUsedAt?.getTime();
    // A write's answer comes once its group commit is done, and so is every write queued before it.
    const writesSettled = async () => expect((await t.call("DELETE", "/plants/404", { token })).status).toBe(404);
    expect(lastUsed()).toBeUndefined();

    expect((await t.call("GET", "/plants", { token })).status).toBe(200);
    await writesSettled();
    expect(lastUsed()).toBe(now);
    const firstUse = now;
    now += 30_000;
    await t.call("GET", "/plants", { token });
    await writesSettled();
    expect(lastUsed()).toBe(firstUse);
    now += 30_000;
    await t.call("GET", "/plants", { token });
    await writesSettled();
    expect(lastUsed()).toBe(now);
  });

  test("user names are checked", () => {
    const t = makeTestApp();
    expect(() => t.tokens.issue("has space")).toThrow(/user name/);
    expect(() => t.tokens.issue("")).toThrow(/user name/);
    expect(() => t.tokens.issue("x".repeat(65))).toThrow(/user name/);
  });
});
