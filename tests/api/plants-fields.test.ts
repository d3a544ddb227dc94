import { beforeEach, describe, expect, test } from "bun:test";
import { LIST_CHUNK_SIZE } from "../../src/core/stores";
import { expectError, makeTestApp, type TestApp } from "../support/helpers";

const MIN = "-9223372036854775808";
const MAX = "9223372036854775807";
const PAST_2_53 = "9007199254740993"; // 2^53 + 1: a double would write ...992

let t: TestApp;
let token: string;
beforeEach(async () => {
  t = await makeTestApp();
  token = await t.tokenFor("alice");
});

/** Creates a plant from raw JSON (exact ids), with a tag when given. */
async function create(id: string, name: string, tag?: string) {
  const tagPart = tag === undefined ? "" : `,"tag":${JSON.stringify(tag)}`;
  const response = await t.call("POST", "/plants", { token, json: `{"id":${id},"name":"${name}"${tagPart}}` });
  expect(response.status).toBe(200);
}

const get = (path: string, headers: Record<string, string> = {}) => t.call("GET", path, { token, headers });

/** The raw body of a 200: ids are checked as text, never through a JS number. */
async function bodyOf(path: string): Promise<string> {
  const response = await get(path);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("application/json;charset=utf-8");
  return response.text();
}

async function seedEdges() {
  await create(MAX, "max", "edge");
  await create(MIN, "min");
  await create(PAST_2_53, "past", "big");
  await create("5", "five");
}

describe("GET /plants with fields", () => {
  test("fields=id: exact ids over the whole int64 range, by id", async () => {
    await seedEdges();
    expect(await bodyOf("/plants?fields=id")).toBe(`[{"id":${MIN}},{"id":5},{"id":${PAST_2_53}},{"id":${MAX}}]`);
  });

  test("fields come in the order id, name, tag whatever order they are given in; tag left out when none", async () => {
    await seedEdges();
    const all = `[{"id":${MIN},"name":"min"},{"id":5,"name":"five"},{"id":${PAST_2_53},"name":"past","tag":"big"},{"id":${MAX},"name":"max","tag":"edge"}]`;
    expect(await bodyOf("/plants?fields=tag,name,id")).toBe(all);
    expect(await bodyOf("/plants?fields=id%2Cname%2Ctag")).toBe(all);
    expect(await bodyOf("/plants?fields=tag,id")).toBe(
      `[{"id":${MIN}},{"id":5},{"id":${PAST_2_53},"tag":"big"},{"id":${MAX},"tag":"edge"}]`,
    );
    expect(await bodyOf("/plants?fields=name")).toBe('[{"name":"min"},{"name":"five"},{"name":"past"},{"name":"max"}]');
    expect(await bodyOf("/plants?fields=tag")).toBe('[{},{},{"tag":"big"},{"tag":"edge"}]');
  });

  test("without fields the answer is as before: name and tag, no id", async () => {
    await seedEdges();
    expect(await bodyOf("/plants")).toBe(
      '[{"name":"min"},{"name":"five"},{"name":"past","tag":"big"},{"name":"max","tag":"edge"}]',
    );
    expect(await bodyOf("/plants?limit=2")).toBe('[{"name":"min"},{"name":"five"}]');
  });

  test("a page's Link keeps fields (and tag), and following it keeps the shape", async () => {
    await seedEdges();
    const first = await get("/plants?limit=2&fields=name,id");
    expect(await first.text()).toBe(`[{"id":${MIN},"name":"min"},{"id":5,"name":"five"}]`);
    expect(first.headers.get("link")).toBe('</plants?limit=2&after=5&fields=id,name>; rel="next"');
    const second = await get("/plants?limit=2&after=5&fields=id,name");
    expect(await second.text()).toBe(`[{"id":${PAST_2_53},"name":"past"},{"id":${MAX},"name":"max"}]`);
    expect(second.headers.get("link")).toBeNull();
    const tagged = await get("/plants?limit=1&tag=big&fields=id");
    expect(await tagged.text()).toBe(`[{"id":${PAST_2_53}}]`);
    await create("6", "six", "big");
    const more = await get("/plants?limit=1&tag=big&fields=id");
    expect(more.headers.get("link")).toBe(`</plants?limit=1&after=6&tag=big&fields=id>; rel="next"`);
  });

  test.each([
    ["fields=", "fields: empty;"],
    ["fields", "fields: empty;"],
    ["fields=id,id", "fields: id is given more than once;"],
    ["fields=name,tag,name", "fields: name is given more than once;"],
    ["fields=color", "fields: color is not a field of a plant;"],
    ["fields=id,", "fields: an empty name is not a field of a plant;"],
    ["fields=ID", "fields: ID is not a field of a plant;"],
    ["fields=id&fields=name", "fields: given more than once;"],
  ])("?%s is 400 naming it", async (query, start) => {
    for (const path of [`/plants?${query}`, `/plants/5?${query}`]) {
      const message = await expectError(await get(path), 400);
      expect(message.startsWith(start)).toBe(true);
    }
  });

  test("a list past one chunk is streamed with fields=id, every id exact", async () => {
    const owner = (await t.tokens.authenticate(token))?.id as number;
    const count = LIST_CHUNK_SIZE + 5;
    const base = 2n ** 53n - 2n; // the ids cross 2^53
    const ids = Array.from({ length: count }, (_, i) => base + BigInt(i));
    for (let start = 0; start < count; start += LIST_CHUNK_SIZE)
      await Promise.all(
        ids
          .slice(start, start + LIST_CHUNK_SIZE)
          .map((id) => t.stores.plants.createPlant(owner, { id, name: `p${id}` })),
      );
    const response = await get("/plants?fields=id");
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const pieces: string[] = [];
    const decoder = new TextDecoder();
    for (let read = await reader.read(); !read.done; read = await reader.read())
      pieces.push(decoder.decode(read.value));
    expect(pieces.length).toBe(2);
    expect(pieces.join("")).toBe(`[${ids.map((id) => `{"id":${id}}`).join(",")}]`);
    const limited = await get(`/plants?fields=id&limit=${LIST_CHUNK_SIZE + 2}`);
    expect(limited.headers.get("link")).toBe(
      `</plants?limit=${LIST_CHUNK_SIZE + 2}&after=${ids[LIST_CHUNK_SIZE + 1]}&fields=id>; rel="next"`,
    );
    expect(await limited.text()).toBe(
      `[${ids
        .slice(0, LIST_CHUNK_SIZE + 2)
        .map((id) => `{"id":${id}}`)
        .join(",")}]`,
    );
  });
});

describe("GET /plants/{id} with fields", () => {
  test("exact ids at the int64 ends and past 2^53, fields in order, tag left out when none", async () => {
    await seedEdges();
    expect(await bodyOf(`/plants/${MIN}?fields=id`)).toBe(`{"id":${MIN}}`);
    expect(await bodyOf(`/plants/${MAX}?fields=tag,name,id`)).toBe(`{"id":${MAX},"name":"max","tag":"edge"}`);
    expect(await bodyOf(`/plants/${PAST_2_53}?fields=id,tag`)).toBe(`{"id":${PAST_2_53},"tag":"big"}`);
    expect(await bodyOf("/plants/5?fields=name,tag")).toBe('{"name":"five"}');
    expect(await bodyOf("/plants/5")).toBe('{"name":"five"}');
  });

  test("the ETag is the plant's with or without fields, and If-None-Match still answers 304", async () => {
    await seedEdges();
    const plain = await get(`/plants/${MAX}`);
    const etag = plain.headers.get("etag") as string;
    expect(etag).toMatch(/^"/);
    const chosen = await get(`/plants/${MAX}?fields=id`);
    expect(chosen.headers.get("etag")).toBe(etag);
    expect(await chosen.text()).toBe(`{"id":${MAX}}`);
    const again = await get(`/plants/${MAX}?fields=id`, { "if-none-match": etag });
    expect(again.status).toBe(304);
    expect(again.headers.get("etag")).toBe(etag);
    expect(await again.text()).toBe("");
  });

  test("a missing plant is 404 with fields; bad fields are 400 even then", async () => {
    expect(await expectError(await get("/plants/77?fields=id"), 404)).toContain("id:");
    expect(await expectError(await get("/plants/77?fields=nope"), 400)).toStartWith("fields: nope");
  });
});
