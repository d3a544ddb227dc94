import { afterAll, afterEach, beforeEach, setDefaultTimeout } from "bun:test";
import { closeAdminSession, offerForReuse, onPostgres, openedStores } from "./helpers";
import { SLOW_TEST_TIMEOUT_MS } from "./timeouts";

// For the first test file only (Bun 1.4.5 resets it per file): the files in tests/process and
// tests/engines each set it again (support/timeouts.ts), and `bun run test` passes --timeout.
setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

// On PostgreSQL every test app holds a pool: the stores a test opened are closed after it, so
// connections never pile up past max_connections, and their databases offered to the next
// tests (helpers.ts, offerForReuse); those opened outside a test (a file's beforeAll) at the
// end of the run. SQLite's in-memory databases go with the process.
if (onPostgres) {
  let beforeTest = new Set(openedStores);
  beforeEach(() => {
    beforeTest = new Set(openedStores);
  });
  afterEach(async () => {
    const opened = [...openedStores].filter((stores) => !beforeTest.has(stores));
    for (const stores of opened) openedStores.delete(stores);
    await Promise.all(opened.map((stores) => stores.close()));
    for (const stores of opened) await offerForReuse(stores);
  });
  afterAll(async () => {
    await Promise.all([...openedStores].map((stores) => stores.close()));
    await closeAdminSession();
  });
}
