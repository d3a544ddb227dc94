import type { Plant } from "../core/plant";
import { HttpError } from "../http/errors";
import { shownName } from "../http/query-names";
import { PLANT_FIELDS } from "./model";

export type Fields = ReadonlyArray<(typeof PLANT_FIELDS)[number]>;

const HINT = `give a comma-separated subset of ${PLANT_FIELDS.join(",")}, each once, e.g. fields=id,name`;

/** The names asked for, in the answer's order; 400 naming an unknown or repeated one. */
export function parseFields(value: string): Fields {
  if (value === "") throw new HttpError(400, `fields: empty; ${HINT}`);
  const asked = new Set<string>();
  for (const name of value.split(",")) {
    if (!(PLANT_FIELDS as readonly string[]).includes(name)) {
      const shown = name === "" ? "an empty name" : shownName(name, "a name");
      throw new HttpError(400, `fields: ${shown} is not a field of a plant; ${HINT}`);
    }
    if (asked.has(name)) throw new HttpError(400, `fields: ${name} is given more than once; ${HINT}`);
    asked.add(name);
  }
  return PLANT_FIELDS.filter((field) => asked.has(field));
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
    else if (plant[field] !== undefined) json += `,"${field}":${JSON.stringify(plant[field])}`;
  }
  return `{${json.slice(1)}}`;
}
