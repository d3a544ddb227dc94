import type { Database } from "bun:sqlite";
import type { StoreFigures } from "../../core/stores";

/** Two pragmas read from the database header: the same cost at 10 plants or 10 million. */
export function storeFigures(sqlite: Database): StoreFigures {
  const size = sqlite.prepare<{ bytes: number }, []>(
    "SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()",
  );
  return {
    databaseBytes: () => size.get()?.bytes ?? 0,
  };
}
