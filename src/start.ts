/**
 * `bun run start`: runs the service from its bytecode bundle (start/bundle.ts), building it
 * first when the sources changed since the last start. If the bundle cannot be built (a
 * read-only checkout, a bundler fault), the service starts from source as `bun src/index.ts`
 * would, after one line on stderr saying why: a start never fails for want of a cache.
 */
import { join } from "node:path";
import { startBundle } from "./start/bundle";

const root = join(import.meta.dir, "..");
let entry: string | undefined;
try {
  // Said before the build, which takes about a second: a first start after a change is not a hang.
  const bundle = await startBundle(root, join(root, ".cache/start"), () =>
    console.error("plant-store: building the start bundle (the sources changed since it was last built)"),
  );
  entry = bundle.entry;
} catch (error) {
  const reason = error instanceof Error ? error.message.split("\n")[0] : String(error);
  console.error(`plant-store: running from source, the start bundle could not be built: ${reason}`);
}
await import(entry ?? "./index");
