/**
 * The bundle `bun run start` runs: src/index.ts and the writer thread's script built by
 * Bun.build into one CommonJS file each, compiled to bytecode, kept under
 * .cache/start/<key>/ and rebuilt only when what it is built from changes.
 *
 * Why: from source every start parses about 450 modules (the service's, Elysia's, TypeBox's,
 * Drizzle's) before the first request; bytecode skips the parse and most of the
 * compile. `bun bench/cold-start.ts` measures it against the floor. No source map: a linked
 * one is read at every start and cost 20 ms of a 65 ms start (2026-11-23, five variants
 * launched alternately); the bundle is not minified, so stack traces still name functions.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";

/** What a build is made from, besides Bun itself: a change to any of them is a new build. */
const INPUT_FOLDERS = ["src", "drizzle"];
const INPUT_FILES = ["package.json", "bun.lock", "tsconfig.json", "bunfig.toml"];

/** Where the writer thread's script lands in a build (worker-writer.ts reads it by this name). */
export const WRITER_SCRIPT = "db/sqlite/writer-worker.js";

export interface StartBundle {
  /** The built entry point to import. */
  entry: string;
  /** True when this call built it (the first start after a change), false when it was reused. */
  built: boolean;
}

/**
 * The key of a build: every input file's path, size and modification time (as make and Bun's
 * own caches judge a file changed), the project's own path (a build holds absolute paths: the
 * migrations, the writer script) and the Bun that compiled the bytecode, which another Bun
 * version would refuse. Reading and hashing the files' contents instead took 2.1 ms of every
 * start against 0.5–0.7 ms for this (100 files; `bundleKey` in a loop of 20, 2026-11-23).
 */
export function bundleKey(root: string): string {
  const hash = new Bun.CryptoHasher("sha256");
  hash.update(`${Bun.version} ${Bun.revision}\0${root}\0`);
  const files = INPUT_FILES.map((name) => join(root, name)).filter((path) => existsSync(path));
  for (const folder of INPUT_FOLDERS) {
    const dir = join(root, folder);
    if (!existsSync(dir)) continue;
    for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true }))
      if (entry.isFile()) files.push(join(entry.parentPath, entry.name));
  }
  for (const path of files.sort()) {
    const { size, mtimeNs } = statSync(path, { bigint: true });
    hash.update(`${relative(root, path)}\0${size}\0${mtimeNs}\0`);
  }
  return hash.digest("hex").slice(0, 24);
}

/** Whether process `pid` is still running (signal 0 only checks). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, under another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Marks `build` as in use by this process until it exits: a server started from an older
 * build still reads from it (the writer thread's script when it starts one, the Swagger
 * assets), so a newer start must not remove it under it.
 */
function claim(build: string) {
  try {
    const claims = join(build, ".running");
    mkdirSync(claims, { recursive: true });
    const mine = join(claims, String(process.pid));
    writeFileSync(mine, "");
    process.on("exit", () => rmSync(mine, { force: true }));
  } catch {
    // A cache this process cannot write to: no start from here can remove the build either.
  }
}

/** Removes the builds no running process started from, and scratch folders of dead builds. */
function removeUnused(cacheDir: string, keep: string) {
  for (const name of readdirSync(cacheDir)) {
    if (name === keep) continue;
    const path = join(cacheDir, name);
    const building = /^\.building-(\d+)-/.exec(name);
    const users = building
      ? [building[1] as string]
      : existsSync(join(path, ".running"))
        ? readdirSync(join(path, ".running"))
        : [];
    if (!users.some((pid) => alive(Number(pid)))) rmSync(path, { recursive: true, force: true });
  }
}

/**
 * The bundle for the sources under `root`, built into `cacheDir` if it is not there yet, and
 * claimed by this process. Builds go to a folder of their own and are renamed into place
 * whole, so a start racing another, or killed mid-build, never runs half a build; after a
 * build, the builds no running server uses are removed. `onBuild` is called before a build
 * starts (it takes about a second). Throws with the bundler's messages
 * when the build fails.
 */
export async function startBundle(
  root: string,
  cacheDir: string,
  onBuild: () => void = () => {},
): Promise<StartBundle> {
  const key = bundleKey(root);
  const final = join(cacheDir, key);
  const entry = join(final, "index.js");
  if (existsSync(entry)) {
    claim(final);
    return { entry, built: false };
  }

  onBuild();
  mkdirSync(cacheDir, { recursive: true });
  const scratch = join(cacheDir, `.building-${process.pid}-${Date.now()}`);
  try {
    const result = await Bun.build({
      entrypoints: [join(root, "src/index.ts"), join(root, "src/db/sqlite/writer-worker.ts")],
      root: join(root, "src"),
      outdir: scratch,
      target: "bun",
      format: "cjs",
      bytecode: true,
      // Paths the bundle needs at run time name the folder it is renamed to, not the scratch one.
      publicPath: `${final}/`,
      define: { PLANT_STORE_WRITER_SCRIPT: JSON.stringify(join(final, WRITER_SCRIPT)) },
      throw: false,
    });
    if (!result.success) throw new Error(result.logs.map((log) => String(log)).join("\n") || "the build failed");
    // A folder under this key without its entry point is a damaged build: it is replaced.
    if (existsSync(final) && !existsSync(entry)) rmSync(final, { recursive: true, force: true });
    try {
      renameSync(scratch, final);
    } catch (error) {
      // Another start built the same key first: its build is as good as this one.
      if (!existsSync(entry)) throw error;
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  claim(final);
  removeUnused(cacheDir, key);
  return { entry, built: true };
}
