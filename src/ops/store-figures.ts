import { count } from "drizzle-orm";
import type { AppDatabase } from "../db/client";
import { plants, users } from "../db/schema";
import type { StoreFigures } from "./metrics";

/** Counted at scrape time, not on every write: a count over a million plants takes a few ms. */
export function storeFigures(db: AppDatabase): StoreFigures {
  const plantCount = db.select({ n: count() }).from(plants).prepare();
  const userCount = db.select({ n: count() }).from(users).prepare();
  const size = db.$client.prepare<{ bytes: number }, []>(
    "SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()",
  );
  return {
    plants: () => plantCount.get()?.n ?? 0,
    users: () => userCount.get()?.n ?? 0,
    databaseBytes: () => size.get()?.bytes ?? 0,
  };
}
