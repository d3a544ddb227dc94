/**
 * `bun run start` (src/start.ts) runs the service from a bytecode bundle it builds and keeps
 * under .cache/start/: built once, reused while the sources are unchanged, rebuilt after a
 * change, and never a reason not to start. Each test works on a copy of the project (its
 * node_modules linked), so builds and broken caches stay out of the checkout.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import {
  appendFileSync,
  cpSync,
  existsSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { bundleKey, startBundle, WRITER_SCRIPT } from "../src/start/bundle";
import { type RunningServer, scratchDir, startServer } from "./process";

const ROOT = join(import.meta.dir, "..");
const START = ["bun", "--max-http-header-size=16384", "src/start.ts"];
const COPIED = ["src", "drizzle", "package.json", "bun.lock", "tsconfig.json", "bunfig.toml"];

let project: string;
let cleanup: () => void;
let servers: RunningServer[] = [];

beforeEach(() => {
  ({ dir: project, cleanup } = scratchDir());
  for (const name of COPIED) cpSync(join(ROOT, name), join(project, name), { recursive: true });
  symlinkSync(join(ROOT, "node_modules"), join(project, "node_modules"));
});

afterEach(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  servers = [];
  cleanup();
});

async function start(): Promise<RunningServer> {
  const server = await startServer(
    { DATABASE_URL: join(project, "data/plants.sqlite"), LOG_LEVEL: "warn" },
    { command: START, cwd: project },
  );
  servers.push(server);
  return server;
}

async function stop(server: RunningServer) {
  servers = servers.filter((other) => other !== server);
  expect(await server.stop()).toBe(0);
}

function builds(): string[] {
  const cache = join(project, ".cache/start");
  return existsSync(cache) ? readdirSync(cache) : [];
}

function call(server: RunningServer, token: string, path: string, init: RequestInit = {}) {
  return fetch(`${server.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
  });
}

describe("bun run start's bundle", () => {
  test("is built on the first start, serves reads and writes, is reused, and is rebuilt after a change", async () => {
    const first = await start();
    const token = /^(pst_\S+)$/m.exec(first.startupOutput)?.[1] as string;
    expect(token).toBeString();
    const [key] = builds();
    expect(builds()).toHaveLength(1);
    const build = join(project, ".cache/start", key as string);
    expect(existsSync(join(build, "index.js.jsc"))).toBe(true);
    // The writer thread runs the bundle's own build of its script, not the source.
    expect(existsSync(join(build, WRITER_SCRIPT))).toBe(true);
    expect(readFileSync(join(build, "index.js"), "utf8")).toContain(JSON.stringify(join(build, WRITER_SCRIPT)));

    const created = await call(first, token, "/plants", {
      method: "POST",
      body: '{"id": 9007199254740993, "name": "fern"}',
    });
    expect(created.status).toBe(200);
    expect(await created.json()).toEqual({ name: "fern" });
    expect((await call(first, token, "/plants/9007199254740993")).status).toBe(200);
    const docs = await fetch(`${first.url}/swagger/assets/swagger-ui.css`);
    expect(docs.status).toBe(200);
    expect((await docs.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    await stop(first);
    const building = "plant-store: building the start bundle";
    expect(await first.output()).toContain(building);

    const builtAt = statSync(join(build, "index.js")).mtimeMs;
    const second = await start();
    expect(builds()).toEqual([key as string]);
    expect(statSync(join(build, "index.js")).mtimeMs).toBe(builtAt);
    await stop(second);
    expect(await second.output()).not.toContain(building);

    appendFileSync(join(project, "src/app.ts"), "\n// a change\n");
    const third = await start();
    expect(builds()).toHaveLength(1);
    expect(builds()).not.toEqual([key as string]);
    expect((await call(third, token, "/plants/9007199254740993")).status).toBe(200);
  });

  test("a build a running server started from is kept until that server stops", async () => {
    const old = await start();
    const token = /^(pst_\S+)$/m.exec(old.startupOutput)?.[1] as string;
    const [oldKey] = builds();
    appendFileSync(join(project, "src/app.ts"), "\n// a change\n");
    const current = await start();
    expect(builds()).toHaveLength(2);
    const [currentKey] = builds().filter((key) => key !== oldKey);
    // The older server still finds what it reads from its build.
    expect((await fetch(`${old.url}/swagger/assets/swagger-ui.css`)).status).toBe(200);
    expect((await call(old, token, "/plants", { method: "POST", body: '{"id": 2, "name": "ivy"}' })).status).toBe(200);
    await stop(old);

    appendFileSync(join(project, "src/app.ts"), "\n// another change\n");
    await start();
    expect(builds()).toHaveLength(2);
    expect(builds()).toContain(currentKey as string);
    expect(builds()).not.toContain(oldKey as string);
    expect((await call(current, token, "/plants/2")).status).toBe(200);
  });

  test("a damaged build is built again", async () => {
    await stop(await start());
    const [key] = builds();
    const entry = join(project, ".cache/start", key as string, "index.js");
    rmSync(entry);
    const server = await start();
    expect(builds()).toEqual([key as string]);
    expect(existsSync(entry)).toBe(true);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  test("is still used when this process cannot mark it as in use", async () => {
    const cache = join(project, ".cache/start");
    const { entry, built } = await startBundle(project, cache);
    expect(built).toBe(true);
    const claims = join(entry, "..", ".running");
    rmSync(claims, { recursive: true });
    writeFileSync(claims, "not a folder");
    expect(await startBundle(project, cache)).toEqual({ entry, built: false });
  });

  test("that cannot be built leaves the service to start from source, saying why", async () => {
    writeFileSync(join(project, ".cache"), "not a folder");
    const server = await start();
    const token = /^(pst_\S+)$/m.exec(server.startupOutput)?.[1] as string;
    expect((await call(server, token, "/plants", { method: "POST", body: '{"id": 1, "name": "fern"}' })).status).toBe(
      200,
    );
    expect((await call(server, token, "/plants")).status).toBe(200);
    await stop(server);
    expect(await server.output()).toContain("plant-store: running from source, the start bundle could not be built");
  });
});

describe("the bundle's key", () => {
  test("changes with the sources, the migrations and the lockfile, and with nothing else", () => {
    const key = bundleKey(project);
    expect(bundleKey(project)).toBe(key);
    writeFileSync(join(project, "README.md"), "not an input");
    expect(bundleKey(project)).toBe(key);

    const changes = [
      () => appendFileSync(join(project, "src/config.ts"), "\n"),
      () => writeFileSync(join(project, "drizzle/sqlite/extra.sql"), "SELECT 1;"),
      () => appendFileSync(join(project, "bun.lock"), "\n"),
    ];
    const seen = new Set([key]);
    for (const change of changes) {
      change();
      const next = bundleKey(project);
      expect(seen.has(next)).toBe(false);
      seen.add(next);
    }
  });
});
