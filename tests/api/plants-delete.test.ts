import { beforeEach, describe, expect, test } from "bun:test";
import { expectError, makeTestApp, type TestApp } from "../support/helpers";

const ID_MESSAGE = "id: must be an integer between -9223372036854775808 and 9223372036854775807";

describe("DELETE /plants/{id}", () => {
  let t: TestApp;
  let token: string;

  beforeEach(async () => {
    t = await makeTestApp();
    token = await t.tokenFor("alice");
  });

  const create = (id: string, name: string, as = token) => t.createPlant(id, name, as);
  const remove = (id: string, as = token) => t.call("DELETE", `/plants/${id}`, { token: as });
  const list = async (as = token) => (await t.call("GET", "/plants", { token: as })).json();

  test("deleting an owned plant is 204 with an empty body, and the plant is gone", async () => {
    await create("7", "Fern");
    await create("8", "Ivy");
    const response = await remove("7");
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");
    expect(await list()).toEqual([{ name: "Ivy" }]);
  });

  test("a second delete of the same id is 404", async () => {
    await create("7", "Fern");
    expect((await remove("7")).status).toBe(204);
    await expectError(await remove("7"), 404);
  });

  test("an id the caller never had is 404", async () => {
    await expectError(await remove("12345"), 404);
  });

  test("another user's plant is 404 and stays in place for its owner", async () => {
    const bob = await t.tokenFor("bob");
    await create("7", "Bob's fern", bob);
    const message = await expectError(await remove("7"), 404);
    expect(message).not.toContain("bob");
    expect(message).not.toContain("Bob");
    expect(await list(bob)).toEqual([{ name: "Bob's fern" }]);
  });

  test("another user's plant and a missing plant get the same answer", async () => {
    const bob = await t.tokenFor("bob");
    await create("7", "Bob's fern", bob);
    const theirs = await remove("7");
    const missing = await remove("8");
    expect(theirs.status).toBe(missing.status);
    expect(await theirs.text()).toBe(await missing.text());
  });

  test("deleting the caller's plant leaves another user's plant with the same id", async () => {
    const bob = await t.tokenFor("bob");
    await create("7", "Alice's fern");
    await create("7", "Bob's fern", bob);
    expect((await remove("7")).status).toBe(204);
    expect(await list()).toEqual([]);
    expect(await list(bob)).toEqual([{ name: "Bob's fern" }]);
  });

  test("the largest int64 id is deleted exactly, leaving 9223372036854775806", async () => {
    await create("9223372036854775807", "max");
    await create("9223372036854775806", "max-1");
    expect((await remove("9223372036854775807")).status).toBe(204);
    expect(await list()).toEqual([{ name: "max-1" }]);
    await expectError(await remove("9223372036854775807"), 404);
    expect((await remove("9223372036854775806")).status).toBe(204);
    expect(await list()).toEqual([]);
  });

  test("the smallest int64 id is deleted exactly, leaving -9223372036854775807", async () => {
    await create("-9223372036854775808", "min");
    await create("-9223372036854775807", "min+1");
    expect((await remove("-9223372036854775808")).status).toBe(204);
    expect(await list()).toEqual([{ name: "min+1" }]);
  });

  test("ids past 2^53 are not rounded", async () => {
    await create("9007199254740993", "2^53+1");
    await create("9007199254740992", "2^53");
    expect((await remove("9007199254740993")).status).toBe(204);
    expect(await list()).toEqual([{ name: "2^53" }]);
  });

  test("zero and negative ids are deletable", async () => {
    await create("0", "zero");
    await create("-3", "minus three");
    expect((await remove("0")).status).toBe(204);
    expect((await remove("-3")).status).toBe(204);
    expect(await list()).toEqual([]);
  });

  test.each([
    ["text", "abc"],
    ["a fraction", "1.5"],
    ["just above the int64 range", "9223372036854775808"],
    ["just below the int64 range", "-9223372036854775809"],
    ["hexadecimal", "0x10"],
    ["in exponent form", "1e3"],
    ["with a plus sign", "+7"],
    ["with a leading space", "%207"],
  ])("an id that is %s (%s) is 400 naming id and its rule", async (_kind, id) => {
    await create("7", "Fern");
    expect(await expectError(await remove(id), 400)).toBe(ID_MESSAGE);
    expect(await list()).toEqual([{ name: "Fern" }]);
  });

  test("the 400 message never echoes the id sent", async () => {
    const message = await expectError(await remove("secret-ish-value"), 400);
    expect(message).not.toContain("secret-ish-value");
  });
});
