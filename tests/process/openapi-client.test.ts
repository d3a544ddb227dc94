import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import openapiTS, { astToString } from "openapi-typescript";
import { OPENAPI_FILE } from "../../scripts/openapi";
import { runCli, scratchDir, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const ROOT = new URL("../..", import.meta.url).pathname;

/*
 * A client as a consumer of openapi.json writes it: types from openapi-typescript, calls through
 * openapi-fetch. It lives under tests/.tmp/ (gitignored) so that it resolves openapi-fetch from
 * this repository's node_modules, and it is checked for the browser (DOM lib, no Bun types).
 */
const CLIENT = `import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./schema";

type Plant = components["schemas"]["Plant"];

export async function roundTrip(baseUrl: string, token: string) {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: \`Bearer \${token}\` } });

  const created = await client.POST("/plants", { body: { id: 1, name: "Monstera", tag: "tropical" } });
  const createdPlant: Plant | undefined = created.data;
  const duplicate = await client.POST("/plants", { body: { id: 1, name: "Monstera again" } });
  const conflict: string | undefined = duplicate.error?.message;
  await client.POST("/plants", { body: { id: 2, name: "Fern" } });
  const listed = await client.GET("/plants", { params: { query: { limit: 1 } } });
  const firstPlants: Plant[] | undefined = listed.data;
  const deleted = await client.DELETE("/plants/{id}", { params: { path: { id: 1 } } });
  const remaining = await client.GET("/plants");

  return {
    created: { status: created.response.status, plant: createdPlant },
    duplicate: { status: duplicate.response.status, message: conflict },
    listed: { status: listed.response.status, plants: firstPlants },
    deleted: { status: deleted.response.status },
    remaining: remaining.data,
  };
}

/** Every plant's name, page by page: each page's Link header names the next one's after. */
export async function pageThrough(baseUrl: string, token: string, tag?: string) {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: \`Bearer \${token}\` } });
  const names: string[] = [];
  let after: number | undefined;
  for (;;) {
    const query = { limit: 2, ...(after === undefined ? {} : { after }), ...(tag === undefined ? {} : { tag }) };
    const page = await client.GET("/plants", { params: { query } });
    names.push(...(page.data ?? []).map((plant) => plant.name));
    const next = page.response.headers.get("link")?.match(/<([^>]+)>; rel="next"/)?.[1];
    if (next === undefined) return names;
    after = Number(new URL(next, baseUrl).searchParams.get("after"));
  }
}

/** A safe rename: read the ETag, PATCH with If-Match, then the same stale ETag gets 412; a PUT replaces. */
export async function safeRename(baseUrl: string, token: string) {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: \`Bearer \${token}\` } });
  const path = { id: 10 };
  await client.POST("/plants", { body: { id: 10, name: "Fern", tag: "shade" } });
  const read = await client.GET("/plants/{id}", { params: { path } });
  const etag: string = read.response.headers.get("etag") ?? "";
  const renamed = await client.PATCH("/plants/{id}", {
    params: { path, header: { "If-Match": etag } },
    body: { name: "Ivy" },
  });
  const renamedPlant: Plant | undefined = renamed.data;
  const stale = await client.PATCH("/plants/{id}", {
    params: { path, header: { "If-Match": etag } },
    body: { tag: null },
  });
  const staleMessage: string | undefined = stale.error?.message;
  const newEtag = renamed.response.headers.get("etag") ?? "";
  const replaced = await client.PUT("/plants/{id}", {
    params: { path, header: { "If-Match": newEtag } },
    body: { name: "Oak" },
  });
  return {
    etagChanged: etag !== "" && newEtag !== "" && newEtag !== etag,
    renamed: { status: renamed.response.status, plant: renamedPlant },
    stale: { status: stale.response.status, error: stale.error?.error, message: staleMessage },
    replaced: { status: replaced.response.status, plant: replaced.data, etag: replaced.response.headers.get("etag") },
    storedAsPut:
      (await client.GET("/plants/{id}", { params: { path } })).response.headers.get("etag") ===
      replaced.response.headers.get("etag"),
  };
}

/** A safe retried create: the same Idempotency-Key and body replays the first answer; another body is 422. */
export async function safeRetry(baseUrl: string, token: string) {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: \`Bearer \${token}\` } });
  const header = { "Idempotency-Key": "retry-20" };
  const first = await client.POST("/plants", { params: { header }, body: { id: 20, name: "Fern" } });
  const again = await client.POST("/plants", { params: { header }, body: { id: 20, name: "Fern" } });
  const other = await client.POST("/plants", { params: { header }, body: { id: 21, name: "Ivy" } });
  const replayedPlant: Plant | undefined = again.data;
  return {
    first: { status: first.response.status, plant: first.data },
    again: {
      status: again.response.status,
      plant: replayedPlant,
      replayed: again.response.headers.get("idempotent-replayed"),
    },
    other: { status: other.response.status, error: other.error?.error },
  };
}

/** Never called: each call is a type error, or the check fails on an unused directive. */
export function misuses(client: Client<paths>) {
  // @ts-expect-error name must be a string
  void client.POST("/plants", { body: { id: 3, name: 42 } });
  // @ts-expect-error id is required
  void client.POST("/plants", { body: { name: "No id" } });
  // @ts-expect-error limit is a number
  void client.GET("/plants", { params: { query: { limit: "ten" } } });
  // @ts-expect-error the id path parameter is required
  void client.DELETE("/plants/{id}", {});
  // @ts-expect-error Idempotency-Key is a string
  void client.POST("/plants", { params: { header: { "Idempotency-Key": 7 } }, body: { id: 4, name: "Key" } });
  // @ts-expect-error If-Match is a string
  void client.PATCH("/plants/{id}", { params: { path: { id: 1 }, header: { "If-Match": 5 } }, body: {} });
  // @ts-expect-error a PATCH name must be a string
  void client.PATCH("/plants/{id}", { params: { path: { id: 1 } }, body: { name: 5 } });
  // @ts-expect-error a PUT needs a name
  void client.PUT("/plants/{id}", { params: { path: { id: 1 } }, body: { tag: "x" } });
  // @ts-expect-error there is no such path
  void client.GET("/plant");
}
`;

/** A call the types must refuse: the harness has to report it, or it checks nothing. */
const BROKEN = `import createClient from "openapi-fetch";
import type { paths } from "./schema";

void createClient<paths>().POST("/plants", { body: { id: "1", name: "Monstera" } });
`;

const tsconfig = (files: string[]) => ({
  compilerOptions: {
    target: "ESNext",
    module: "Preserve",
    moduleResolution: "bundler",
    lib: ["ESNext", "DOM", "DOM.Iterable"],
    types: [],
    strict: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    verbatimModuleSyntax: true,
    skipLibCheck: true,
    noEmit: true,
  },
  files,
});

async function typeCheck(project: string) {
  const proc = Bun.spawn(["bun", "check", "--no-pretty", "-p", project], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { output: stdout + stderr, code };
}

let dir: string;
beforeAll(async () => {
  const tmp = join(ROOT, "tests/.tmp");
  mkdirSync(tmp, { recursive: true });
  dir = mkdtempSync(join(tmp, "openapi-client-"));
  const document = await Bun.file(OPENAPI_FILE).text();
  await Bun.write(join(dir, "schema.ts"), astToString(await openapiTS(document)));
  await Bun.write(join(dir, "client.ts"), CLIENT);
  await Bun.write(join(dir, "broken.ts"), BROKEN);
  await Bun.write(join(dir, "tsconfig.json"), JSON.stringify(tsconfig(["schema.ts", "client.ts"])));
  await Bun.write(join(dir, "tsconfig.broken.json"), JSON.stringify(tsconfig(["schema.ts", "broken.ts"])));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a client generated from openapi.json (openapi-typescript + openapi-fetch)", () => {
  test("type-checks, and refuses misuse", async () => {
    const { output, code } = await typeCheck(join(dir, "tsconfig.json"));
    expect(output).not.toContain("error TS");
    expect(code).toBe(0);
  });

  test("the type check is real: a string id is reported", async () => {
    const { output, code } = await typeCheck(join(dir, "tsconfig.broken.json"));
    expect(code).not.toBe(0);
    expect(output).toMatch(/broken\.ts\(4,\d+\): error TS2322/);
  });

  test("makes a round trip against the real server with a CLI-issued token", async () => {
    const scratch = scratchDir();
    const env = { DATABASE_URL: join(scratch.dir, "plants.sqlite") };
    const server = await startServer(env);
    try {
      const cli = await runCli(["token", "create", "--user", "openapi-client"], env);
      expect(cli.code).toBe(0);
      const token = cli.stdout.trimEnd().split("\n").at(-1) as string;
      expect(token).toStartWith("pst_");

      const client: { roundTrip(baseUrl: string, token: string): Promise<unknown> } = await import(
        join(dir, "client.ts")
      );
      expect(await client.roundTrip(server.url, token)).toEqual({
        created: { status: 200, plant: { name: "Monstera", tag: "tropical" } },
        duplicate: {
          status: 409,
          message: "id: you already have a plant with this id; delete it first to replace it",
        },
        listed: { status: 200, plants: [{ name: "Monstera", tag: "tropical" }] },
        deleted: { status: 204 },
        remaining: [{ name: "Fern" }],
      });

      const paging: { pageThrough(baseUrl: string, token: string, tag?: string): Promise<string[]> } = await import(
        join(dir, "client.ts")
      );
      for (const id of [3, 4, 5, 6]) {
        const created = await fetch(`${server.url}/plants`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ id, name: `P${id}`, tag: id % 2 === 0 ? "even" : "odd" }),
        });
        expect(created.status).toBe(200);
      }
      expect(await paging.pageThrough(server.url, token)).toEqual(["Fern", "P3", "P4", "P5", "P6"]);
      expect(await paging.pageThrough(server.url, token, "even")).toEqual(["P4", "P6"]);

      const updates: { safeRename(baseUrl: string, token: string): Promise<unknown> } = await import(
        join(dir, "client.ts")
      );
      expect(await updates.safeRename(server.url, token)).toEqual({
        etagChanged: true,
        renamed: { status: 200, plant: { name: "Ivy", tag: "shade" } },
        stale: { status: 412, error: 412, message: expect.any(String) },
        replaced: { status: 200, plant: { name: "Oak" }, etag: expect.stringMatching(/^"[^"]+"$/) },
        storedAsPut: true,
      });

      const retries: { safeRetry(baseUrl: string, token: string): Promise<unknown> } = await import(
        join(dir, "client.ts")
      );
      expect(await retries.safeRetry(server.url, token)).toEqual({
        first: { status: 200, plant: { name: "Fern" } },
        again: { status: 200, plant: { name: "Fern" }, replayed: "true" },
        other: { status: 422, error: 422 },
      });
    } finally {
      await server.stop();
      scratch.cleanup();
    }
  });
});
