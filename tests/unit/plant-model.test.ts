/**
 * A plant's fields are declared once, as columns of the Drizzle schema; the HTTP models are
 * checked against them here, on both engines' schemas.
 */
import { describe, expect, test } from "bun:test";
import { getTableColumns } from "drizzle-orm";
import { plants as postgresPlants } from "../../src/db/postgres/schema";
import { plants as sqlitePlants } from "../../src/db/sqlite/schema";
import { plantETag, plantModels } from "../../src/plants/model";

const fieldsOf = (table: typeof sqlitePlants | typeof postgresPlants) =>
  Object.keys(getTableColumns(table)).filter((field) => field !== "ownerId");

describe("the plant models follow the schema", () => {
  for (const [engine, table] of [
    ["sqlite", sqlitePlants],
    ["postgres", postgresPlants],
  ] as const) {
    test(`${engine}: NewPlant has every column but the owner, in the table's order; Plant the same but the id`, () => {
      expect(Object.keys(plantModels.NewPlant.properties)).toEqual(fieldsOf(table));
      expect(Object.keys(plantModels.Plant.properties)).toEqual(fieldsOf(table).filter((field) => field !== "id"));
    });
  }

  test("the engines' plant tables have the same fields", () => {
    expect(fieldsOf(postgresPlants)).toEqual(fieldsOf(sqlitePlants));
  });

  // ETags and kept Idempotency-Key hashes are computed over the fields that hold a value, named,
  // in the model's order: a reordered model would change every ETag clients hold and refuse every
  // retry of a kept create; a new optional field changes neither for plants without it.
  test("the ETag of a plant follows its fields that hold a value, in the model's order (pinned)", () => {
    expect(plantETag(1n, { name: "Fern", tag: "green" })).toBe('"io6ADJazO3BOWczKchSTJ3Z1x_4"');
    expect(plantETag(9223372036854775807n, { name: "Ivy" })).toBe('"Gxs3dIGLps1DDgmQ5cD57BCHI9g"');
  });
});
