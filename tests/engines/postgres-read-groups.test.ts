import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { SQL } from "bun";
import type { TokenStore } from "../../src/core/stores";
import { ALL_SCOPES } from "../../src/core/tokens";
import { createPostgresTokenStore } from "../../src/db/postgres/tokens";
import { onPostgres, recordedPostgres, type SentStatement } from "../support/helpers";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

/*
 * PostgreSQL's reads in groups (src/db/postgres/groups.ts): token lookups (tokens.ts) that arrive
 * together share a statement, and each still gets its own answer from
 * the tables as they are then, revoked tokens included. What every engine must show (401 for an
 * unknown or revoked token from its next request on, exact pages) is in tests/auth.test.ts,
 * tests/tokens.test.ts and the plants-*.test.ts files.
 */
describe.if(onPostgres)("PostgreSQL token lookups in groups", () => {
  let client: SQL;
  let sent: SentStatement[];
  let tokens: TokenStore;
  const lookups = () => sent.filter(({ sql }) => sql.includes("FROM tokens"));

  beforeEach(async () => {
    let recording: SQL;
    ({ client, sent, recording } = await recordedPostgres());
    tokens = createPostgresTokenStore(recording);
  });

  afterEach(async () => {
    await client.close();
  });

  test("lookups sent together share statements; each is answered for its own token", async () => {
    const alice = await tokens.issue("alice");
    const bob = await tokens.issue("bob");
    const revoked = await tokens.issue("alice");
    expect(await tokens.revoke(revoked.id)).toBe("revoked");
    const ids = new Map([
      [alice.token, { tokenId: alice.id, user: "alice" }],
      [bob.token, { tokenId: bob.id, user: "bob" }],
    ]);
    const [{ id: aliceId }, { id: bobId }] = (await client`
      SELECT id FROM users WHERE name IN ('alice', 'bob') ORDER BY name`) as [{ id: number }, { id: number }];
    const userIds: Record<string, number> = { alice: aliceId, bob: bobId };
    const asked = Array.from(
      { length: 300 },
      (_, i) => [alice.token, bob.token, revoked.token, `pst_unknown_${i % 7}`, alice.token][i % 5] as string,
    );
    sent.length = 0;
    const answers = await Promise.all(asked.map((token) => tokens.authenticate(token)));
    answers.forEach((answer, i) => {
      const known = ids.get(asked[i] as string);
      const user = known && { id: userIds[known.user] as number, tokenId: known.tokenId };
      expect(answer).toEqual(user ? { ...user, scopes: ALL_SCOPES, expiresAt: null, expired: false } : undefined);
    });
    // 300 lookups: far fewer statements, and every one bound to a list of hashes, none repeated.
    expect(lookups().length).toBeGreaterThan(1);
    expect(lookups().length).toBeLessThan(60);
    for (const { params } of lookups()) {
      const hashes = String(params[0]).split(",");
      expect(new Set(hashes).size).toBe(hashes.length);
    }
  });

  test("a token revoked while lookups queue fails in every group that reads the table after it", async () => {
    const alice = await tokens.issue("alice");
    expect(await tokens.authenticate(alice.token)).toBeDefined();
    await tokens.revoke(alice.id);
    const answers = await Promise.all(Array.from({ length: 50 }, () => tokens.authenticate(alice.token)));
    expect(answers.every((answer) => answer === undefined)).toBe(true);
  });

  test("a lookup whose statement fails (the server gone) fails, as every other in its group", async () => {
    const alice = await tokens.issue("alice");
    await client`SELECT 1`;
    const pending = Array.from({ length: 20 }, () => tokens.authenticate(alice.token));
    await client.close();
    const settled = await Promise.allSettled(pending);
    expect(settled.every((outcome) => outcome.status === "rejected")).toBe(true);
  });
});
