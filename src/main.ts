// The compiled binary: no arguments serves, arguments are the CLI. Its argv has the same
// two leading entries as `bun src/main.ts`, so both modules read from argv[2] on.
if (process.argv.length > 2) await import("./cli");
else await import("./index");
