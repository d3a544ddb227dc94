import type { Database } from "bun:sqlite";
import { StartupRefusal } from "../../core/failures";
import { MIGRATIONS_TABLE } from "./migrations";

const NAMED_OBJECTS = 3;
const NAME_CHARACTERS = 40;

const KINDS = new Set(["table", "view", "index", "trigger"]);

export class ForeignDatabaseError extends StartupRefusal {}

/** Quoted so that whatever it holds (line breaks, terminal controls, bidi overrides) stays one readable line. */
function quoted(name: string): string {
  const short = name.length > NAME_CHARACTERS ? `${name.slice(0, NAME_CHARACTERS)}…` : name;
  return JSON.stringify(short).replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, (character) => {
    const code = (character.codePointAt(0) as number).toString(16);
    return code.length <= 4 ? `\\u${code.padStart(4, "0")}` : `\\u{${code}}`;
  });
}

/**
 * Migrating a database with objects but no migrations table would add our tables beside someone
 * else's. Runs before anything writes: even switching to WAL rewrites the file's header.
 */
export function refuseForeignDatabase(sqlite: Database, path: string): void {
  const objects = sqlite
    .query<{ type: string; name: string }, []>(
      "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid",
    )
    .all();
  if (objects.length === 0) return;
  if (objects.some((object) => object.type === "table" && object.name === MIGRATIONS_TABLE)) return;
  const named = objects
    .slice(0, NAMED_OBJECTS)
    .map((object) => `${KINDS.has(object.type) ? object.type : "object"} ${quoted(object.name)}`);
  const more = objects.length > NAMED_OBJECTS ? ` (and ${objects.length - NAMED_OBJECTS} more)` : "";
  throw new ForeignDatabaseError(
    `the database at ${path} is not a Plant Store database: it holds ${named.join(", ")}${more} and no migrations table; point DATABASE_URL at a new file or at a Plant Store database`,
  );
}
