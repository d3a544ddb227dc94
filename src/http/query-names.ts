import { HttpError } from "./errors";

/** The client's name, named back only when it is short and plain. */
export const shownName = (name: string, otherwise: string) => (/^[A-Za-z0-9_.-]{1,32}$/.test(name) ? name : otherwise);

/**
 * Refuses an unknown or repeated query parameter: Elysia keeps the last of a repeated one, so
 * `?limit=5&limit=50` would quietly answer something not asked for. Values are the schema's.
 */
export function checkQueryNames(url: string, schema: { properties: object }, hint: string): void {
  const start = url.indexOf("?");
  if (start < 0) return;
  const seen: string[] = [];
  for (const pair of url.slice(start + 1).split("&")) {
    if (pair === "") continue;
    const equals = pair.indexOf("=");
    const raw = equals < 0 ? pair : pair.slice(0, equals);
    let name = raw;
    if (/[%+]/.test(raw)) {
      try {
        name = decodeURIComponent(raw.replaceAll("+", " "));
      } catch {
        throw new HttpError(400, "query: a parameter name is not valid percent-encoding");
      }
    }
    if (!Object.hasOwn(schema.properties, name)) {
      throw new HttpError(400, `${shownName(name, "a parameter")}: unknown query parameter; ${hint}`);
    }
    if (seen.includes(name)) throw new HttpError(400, `${name}: given more than once; give it once`);
    seen.push(name);
  }
}
