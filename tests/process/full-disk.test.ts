import { Database } from "bun:sqlite";
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { closeSync, fstatSync, ftruncateSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { expectError } from "../support/helpers";
import { type RunningServer, runCli, runToExit, scratchDir, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { until } from "../support/until";
import { bootstrapToken } from "../support/users";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

/*
 * A real disk filling up: the database lives on a 2 MB tmpfs (mounting one needs root, which
 * CI and the development machine have), and a filler file takes whatever space is left.
 */

/** Writes a file until the filesystem refuses another byte, then gives `leave` bytes back. */
function fillDisk(path: string, leave = 0): void {
  const fd = openSync(path, "a");
  try {
    for (const size of [65_536, 4_096, 512, 1]) {
      const chunk = new Uint8Array(size);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
      }
    }
    ftruncateSync(fd, Math.max(0, fstatSync(fd).size - leave));
  } finally {
    closeSync(fd);
  }
}

describe("a full disk", () => {
  test("writes get 507, reads and bookkeeping go on, readiness follows the disk, and shutdown exits 0", async () => {
    const scratch = scratchDir();
    const mount = await runToExit(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", scratch.dir]);
    expect({ code: mount.code, stderr: mount.stderr }).toEqual({ code: 0, stderr: "" });
    const dbPath = join(scratch.dir, "plants.sqlite");
    const filler = join(scratch.dir, "filler");
    let server: RunningServer | undefined;
    try {
      server = await startServer({ DATABASE_URL: dbPath, RATE_LIMIT_PER_MINUTE: "0" });
      const url = server.url;
      const admin = { authorization: `Bearer ${bootstrapToken(server)}` };
      // A token never used yet: its first use is due to be recorded, a write on the read path.
      const created = await runCli(["token", "create", "--user", "bob"], { DATABASE_URL: dbPath });
      const bob = { authorization: `Bearer ${created.stdout.trim().split("\n").at(-1)}` };
      const acknowledged: number[] = [];
      const create = async (id: number) => {
        const response = await fetch(`${url}/plants`, {
          method: "POST",
          headers: { ...admin, "content-type": "application/json" },
          body: JSON.stringify({ id, name: `plant ${id} ${"x".repeat(200)}` }),
        });
        if (response.status === 200) acknowledged.push(id);
        return response;
      };

      // A little room left: the commit that fills the disk leaves part of the WAL written, where
      // a one-page write still fits while clients' writes do not (readiness once flapped on it).
      fillDisk(filler, 30_000);
      let refused: Response | undefined;
      for (let id = 1; id <= 2_000 && !refused; id++) {
        const response = await create(id);
        if (response.status !== 200) refused = response;
        else await response.body?.cancel();
      }
      if (!refused) throw new Error("2,000 writes on a full disk all succeeded");
      expect(await expectError(refused, 507)).toBe(
        "The store is out of disk space. Nothing was saved; retry once space has been freed.",
      );
      const NO_SPACE = "Writes are failing: the store is out of disk space.";
      expect(await expectError(await fetch(`${url}/readyz`), 503)).toBe(NO_SPACE);
      // It stays off while the disk is full, across more than one probe's spacing (1 s).
      const statuses = new Set<number>();
      for (const started = performance.now(); performance.now() - started < 1_500; await Bun.sleep(100)) {
        statuses.add((await fetch(`${url}/readyz`)).status);
      }
      expect([...statuses]).toEqual([503]);

      const read = await fetch(`${url}/plants`, { headers: bob });
      expect(read.status).toBe(200);
      expect(await read.json()).toEqual([]);
      const adminRead = await fetch(`${url}/plants`, { headers: admin });
      expect(((await adminRead.json()) as unknown[]).length).toBe(acknowledged.length);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);

      // Space comes back: readiness turns by itself (a probe write), and writes succeed.
      rmSync(filler);
      await until(async () => (await fetch(`${url}/readyz`)).status === 200, { what: "/readyz to say ready" });
      const responses = await Promise.all(Array.from({ length: 100 }, (_, i) => create(10_000 + i)));
      expect(responses.map((response) => response.status)).toEqual(Array(100).fill(200));

      // The final checkpoint needs room the disk no longer has: logged, and still a clean exit.
      fillDisk(filler);
      const running = server;
      server = undefined;
      expect(await running.stop()).toBe(0);
      const output = await running.output();
      expect(output).toContain("the final WAL checkpoint failed");
      expect(output).toContain("Stopped cleanly.");

      // Every acknowledged plant is there, and nothing else.
      rmSync(filler);
      const db = new Database(dbPath, { readonly: true });
      const stored = db.query<{ id: number }, []>("SELECT id FROM plants ORDER BY id").all();
      expect(stored.map((row) => row.id)).toEqual(acknowledged.sort((a, b) => a - b));
      expect(db.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
      db.close();
    } finally {
      await server?.stop();
      await runToExit(["umount", scratch.dir]);
      scratch.cleanup();
    }
  });
});
