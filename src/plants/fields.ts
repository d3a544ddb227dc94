import type { Plant } from "../core/plant";
import type { PlantPage } from "../core/stores";
import { HttpError } from "../http/errors";
import { shownName } from "../http/query-names";

const FIELD_ORDER = ["id", "name", "tag"] as const;
export type Fields = ReadonlyArray<(typeof FIELD_ORDER)[number]>;

const HINT = "give a comma-separated subset of id,name,tag, each once, e.g. fields=id,name";

/** The names asked for, in the answer's order; 400 naming an unknown or repeated one. */
export function parseFields(value: string): Fields {
  if (value === "") throw new HttpError(400, `fields: empty; ${HINT}`);
  const asked = new Set<string>();
  for (const name of value.split(",")) {
    if (!(FIELD_ORDER as readonly string[]).includes(name)) {
      const shown = name === "" ? "an empty name" : shownName(name, "a name");
      throw new HttpError(400, `fields: ${shown} is not a field of a plant; ${HINT}`);
    }
    if (asked.has(name)) throw new HttpError(400, `fields: ${name} is given more than once; ${HINT}`);
    asked.add(name);
  }
  return FIELD_ORDER.filter((field) => asked.has(field));
}

/** Read from the URL (no query schema, so a plain GET pays nothing). */
export function fieldsOf(url: string): Fields | undefined {
  if (!url.includes("?")) return undefined;
  const given = new URL(url).searchParams.getAll("fields");
  if (given.length > 1) throw new HttpError(400, "fields: given more than once; give it once");
  return given.length === 0 ? undefined : parseFields(given[0] as string);
}

/** The id is written from the bigint's digits, never through a JS number, so it stays exact. */
export function plantJson(fields: Fields, id: bigint | undefined, plant: Plant): string {
  let json = "";
  for (const field of fields) {
    if (field === "id") json += `,"id":${id}`;
    else if (field === "name") json += `,"name":${JSON.stringify(plant.name)}`;
    else if (plant.tag !== undefined) json += `,"tag":${JSON.stringify(plant.tag)}`;
  }
  return `{${json.slice(1)}}`;
}

export function pageJson(fields: Fields, page: PlantPage): string {
  return `[${page.plants.map((plant, i) => plantJson(fields, page.ids?.[i], plant)).join(",")}]`;
}

export const needsIds = (fields: Fields | undefined) => fields?.includes("id") === true;
