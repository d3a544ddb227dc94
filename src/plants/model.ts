import { t } from "elysia";
import type { Plant } from "../core/plant";
import { Int32Query, Int64, Int64Param, Int64Query, Text, withOwnMessage } from "../http/types";

const name = () => Text({ minLength: 1, maxLength: 256, description: "1 to 256 characters" });
const tagText = (description = "0 to 256 characters") => Text({ minLength: 0, maxLength: 256, description });
const tag = () => t.Optional(tagText());

export const plantModels = {
  Plant: t.Object({ name: name(), tag: tag() }),
  NewPlant: withOwnMessage(
    t.Object({
      id: Int64({ description: "Any signed 64-bit integer, unique among the caller's plants" }),
      name: name(),
      tag: tag(),
    }),
  ),
  PlantReplacement: withOwnMessage(t.Object({ name: name(), tag: tag() })),
  PlantPatch: withOwnMessage(
    t.Object({
      name: t.Optional(name()),
      tag: t.Optional(
        t.Union([tagText(), t.Null()], { description: "0 to 256 characters, or null to remove the tag" }),
      ),
    }),
  ),
};

/** A plant's fields in the order answers write them, as the NewPlant model declares them. */
export const PLANT_FIELDS = Object.keys(plantModels.NewPlant.properties) as Array<"id" | keyof Plant>;
/** The fields a plant's owner sets (all but the id). */
export const VALUE_FIELDS = PLANT_FIELDS.filter((field) => field !== "id") as Array<keyof Plant>;
/** The fields that hold a value, named, for ETags and request hashes: a new optional field leaves them as they were. */
export const presentValues = (plant: Partial<Plant>) =>
  VALUE_FIELDS.flatMap((f) => (plant[f] == null ? [] : [[f, plant[f]]]));

/** From the plant's content alone, so every instance and engine gives the same tag for the same plant. */
export const plantETag = (id: bigint | number, plant: Plant) =>
  `"${Bun.SHA256.hash(JSON.stringify([String(id), ...presentValues(plant)]), "base64url").slice(0, 27)}"`;

export const FIELDS_DOC = {
  description:
    "Only these fields of each plant, comma-separated, each once, written in the order id, name, tag " +
    "(`id` an exact JSON integer; `tag` still left out when the plant has none). Without it: `name` and `tag`.",
  examples: ["id,name"],
};

export const listPlantsQuery = t.Object({
  limit: t.Optional(
    Int32Query({
      description:
        "How many plants to return at most; all when absent. When more match past the last one returned, the `Link` header names the next page.",
    }),
  ),
  after: t.Optional(
    Int64Query({
      description: "Only plants whose id is greater than this one (the `Link` header gives it), in decimal",
    }),
  ),
  tag: t.Optional(tagText("Only plants whose tag is exactly this (case-sensitive)")),
  fields: t.Optional(t.String({ ...FIELDS_DOC })),
});

export const plantIdParams = t.Object({
  id: Int64Param({ description: "The id of one of the caller's plants, in decimal", examples: [42] }),
});
