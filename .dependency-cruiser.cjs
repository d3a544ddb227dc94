/**
 * The layers of src/, bottom to top; an import may only point down (`bun run lint` checks it).
 *
 *   core/      plain things: Plant, ids, store interfaces, failure kinds, faults, clock, rate-limit math
 *   db/        the engines (sqlite/, postgres/) and open.ts, the one factory that picks one
 *   http/      the framework's edge: body reader, error mapping, wire defaults, request types
 *   config.ts  the environment, parsed once
 *   auth/ plants/ changes/ webhooks/ tokens/ ops/ docs/   features: plugin + model + service
 *   app.ts     composes the features        server.ts  serves the app
 *   index.ts   listens        cli/, cli.ts  commands        main.ts  the binary's entry
 */
const FEATURES = "^src/(auth|plants|changes|webhooks|tokens|ops|docs)/";
const TOP = "^src/(app|server|index|main|cli)(\\.ts$|/)";

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "Files that import each other cannot be read or changed one at a time.",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "core-is-the-bottom",
      severity: "error",
      comment: "src/core holds plain types and rules; it imports nothing else of src/.",
      from: { path: "^src/core/" },
      to: { path: "^src/", pathNot: "^src/core/" },
    },
    {
      name: "engines-see-only-core",
      severity: "error",
      comment: "An engine knows the store interfaces (core), never HTTP, features or the app.",
      from: { path: "^src/db/" },
      to: { path: "^src/", pathNot: "^src/(core|db)/" },
    },
    {
      name: "one-engine-at-a-time",
      severity: "error",
      comment: "The engines do not know each other; db/open.ts picks one.",
      from: { path: "^src/db/(sqlite|postgres)/" },
      to: { path: "^src/db/(sqlite|postgres)/", pathNot: "^src/db/$1/" },
    },
    {
      name: "http-below-features",
      severity: "error",
      comment: "src/http serves the features; it knows core only.",
      from: { path: "^src/http/" },
      to: { path: "^src/", pathNot: "^src/(core|http)/" },
    },
    {
      name: "config-is-plain",
      severity: "error",
      from: { path: "^src/config\\.ts$" },
      to: { path: "^src/", pathNot: "^src/core/" },
    },
    {
      name: "features-use-stores-not-engines",
      severity: "error",
      comment: "A feature gets its stores injected (core/stores.ts); it never opens an engine or reaches the app.",
      from: { path: FEATURES },
      to: { path: `^src/db/|${TOP}` },
    },
    {
      name: "only-the-top-composes",
      severity: "error",
      comment: "app.ts composes, server.ts serves, index.ts listens, cli/ commands: nothing below imports them.",
      from: { pathNot: TOP },
      to: { path: TOP },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "node_modules" },
    includeOnly: "^src/",
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default"] },
  },
};
