/**
 * The entry point of the compiled binary (`bun run build` → dist/plant-store): with no
 * arguments it serves, with arguments it is the CLI (`plant-store token create --user alice`).
 * In a compiled binary process.argv is ["bun", "/$bunfs/root/plant-store", ...arguments], as
 * under `bun src/main.ts`, so both modules read their arguments from argv[2] on.
 */
if (process.argv.length > 2) await import("./cli");
else await import("./index");
