import { describe, expect, test } from "bun:test";
import { compareIds } from "../../src/db/postgres/plants";

/*
 * PostgreSQL's pages come back as int8 decimal text; their order is checked without making
 * bigints (src/db/postgres/plants.ts). The comparison must agree with the numbers' own order
 * everywhere, the signs, lengths and the ends of the range included. Plain logic: it runs the
 * same on both engines.
 */
describe("comparing int8 ids in their decimal text", () => {
  test("agrees with bigint order on edges and on random pairs", () => {
    const edges = [
      -(2n ** 63n),
      -(2n ** 63n) + 1n,
      -(10n ** 18n),
      -10n,
      -9n,
      -1n,
      0n,
      1n,
      9n,
      10n,
      2n ** 53n + 1n,
      2n ** 63n - 1n,
    ];
    const random = Array.from({ length: 2000 }, () => {
      const magnitude = BigInt(Math.floor(Math.random() * 2 ** 31)) << BigInt(Math.floor(Math.random() * 32));
      return Math.random() < 0.5 ? -magnitude : magnitude;
    });
    const values = [...edges, ...random];
    for (let i = 0; i < values.length; i++) {
      const a = values[i] as bigint;
      const b = values[(i * 7 + 3) % values.length] as bigint;
      for (const [x, y] of [
        [a, b],
        [b, a],
        [a, a],
      ] as Array<[bigint, bigint]>) {
        expect({ x, y, sign: Math.sign(compareIds(String(x), String(y))) }).toEqual({
          x,
          y,
          sign: x < y ? -1 : x > y ? 1 : 0,
        });
      }
    }
    for (const a of edges)
      for (const b of edges) expect(Math.sign(compareIds(String(a), String(b)))).toBe(a < b ? -1 : a > b ? 1 : 0);
  });
});
