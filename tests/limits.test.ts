import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type RunningServer, scratchDir, startServer } from "./process";
import { openRaw } from "./raw-http";

let scratch: ReturnType<typeof scratchDir>;
let server: RunningServer;
let token: string;

beforeAll(async () => {
  scratch = scratchDir();
  server = await startServer({
    DATABASE_URL: join(scratch.dir, "plants.sqlite"),
    IDLE_TIMEOUT_SECONDS: "2",
    BODY_LIMIT_BYTES: "4096",
  });
  token = server.startupOutput.match(/^pst_\S+$/m)?.[0] as string;
});
afterAll(async () => {
  expect(await server.stop()).toBe(0);
  scratch.cleanup();
});

const auth = () => ({ authorization: `Bearer ${token}` });

describe("limits on the real server", () => {
  test("request headers past 16 KiB are refused with 431; below that they are fine", async () => {
    const big = await fetch(`${server.url}/plants`, { headers: { ...auth(), "x-padding": "a".repeat(20_000) } });
    expect(big.status).toBe(431);
    const fine = await fetch(`${server.url}/plants`, { headers: { ...auth(), "x-padding": "a".repeat(8_000) } });
    expect(fine.status).toBe(200);
  });

  test("a declared body over BODY_LIMIT_BYTES gets 413 with the Error body, before it is sent", async () => {
    const raw = await openRaw(server.url);
    await raw.write(
      `POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\n` +
        "Content-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n",
    );
    const response = await raw.response();
    expect(response.status).toBe(413);
    expect(JSON.parse(response.body)).toEqual({ error: 413, message: "The request body must be at most 4096 bytes." });
    await raw.end();
  });

  test("a chunked body that grows past the limit gets 413 with the Error body", async () => {
    const raw = await openRaw(server.url);
    const chunk = "a".repeat(1000);
    await raw.write(
      `POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\n` +
        `Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${`3e8\r\n${chunk}\r\n`.repeat(6)}`,
    );
    const response = await raw.response();
    expect(response.status).toBe(413);
    expect(JSON.parse(response.body)).toMatchObject({ error: 413 });
    await raw.end();
  });

  test("an idle keep-alive connection is closed after IDLE_TIMEOUT_SECONDS", async () => {
    const raw = await openRaw(server.url);
    await raw.write(`GET /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\n\r\n`);
    expect((await raw.response()).status).toBe(200);
    const answered = performance.now();
    await raw.closed(20_000);
    expect(performance.now() - answered).toBeGreaterThan(1_000);
  });

  test("a short Host header is routed like any other (Elysia would misroute it)", async () => {
    for (const host of ["x", "ab", "abc", "127.0.0.1"]) {
      const raw = await openRaw(server.url);
      await raw.write(`GET /plants?limit=1 HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${token}\r\n\r\n`);
      const response = await raw.response();
      expect(response.status).toBe(200);
      expect(response.body).toBe("[]");
      await raw.end();
    }
  });
});

describe("the cap on concurrent work", () => {
  test("past MAX_IN_FLIGHT a request gets a fast 503 with Retry-After and the Error body", async () => {
    const own = scratchDir();
    const capped = await startServer({ DATABASE_URL: join(own.dir, "plants.sqlite"), MAX_IN_FLIGHT: "2" });
    const cappedToken = capped.startupOutput.match(/^pst_\S+$/m)?.[0] as string;
    try {
      const held = await Promise.all(
        [1, 2].map(async () => {
          const raw = await openRaw(capped.url);
          await raw.write(
            `POST /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${cappedToken}\r\n` +
              "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n",
          );
          return raw;
        }),
      );
      let overloaded: Response | undefined;
      for (let attempt = 0; attempt < 500 && !overloaded; attempt++) {
        const probe = await fetch(`${capped.url}/plants`, { headers: { authorization: `Bearer ${cappedToken}` } });
        if (probe.status === 503) overloaded = probe;
        else expect(probe.status).toBe(200);
      }
      expect(overloaded?.headers.get("retry-after")).toBe("1");
      expect(await overloaded?.json()).toEqual({
        error: 503,
        message: "The service is at capacity; retry in a moment.",
      });

      // Finishing the held requests frees the slots.
      for (const [i, raw] of held.entries()) {
        const rest = `"id":${i},"name":"n"}`;
        await raw.write(`${rest.length.toString(16)}\r\n${rest}\r\n0\r\n\r\n`);
        expect((await raw.response()).status).toBe(200);
        await raw.end();
      }
      const after = await fetch(`${capped.url}/plants`, { headers: { authorization: `Bearer ${cappedToken}` } });
      expect(after.status).toBe(200);
      expect(await after.json()).toEqual([{ name: "n" }, { name: "n" }]);
    } finally {
      await capped.stop();
      own.cleanup();
    }
  });
});
