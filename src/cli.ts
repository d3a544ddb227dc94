import { existsSync } from "node:fs";
import { basename } from "node:path";
import { parseArgs } from "node:util";
import { createTokenStore, isValidUserName, USER_NAME_RULE } from "./auth/tokens";
import { ConfigError, ensureDatabaseFolder, loadConfig } from "./config";
import { BackupError, backupDatabase } from "./db/backup";
import { checkDatabase } from "./db/check";
import { openDatabase } from "./db/client";
import { applyMigrations, EMBEDDED_MIGRATIONS, migrationStatus } from "./db/migrations";
import { ForeignDatabaseError } from "./db/ownership";
import { faultSummary } from "./http/errors";

/**
 * The command as the operator runs it, for the usage text: the compiled binary under the name it
 * was started by (process.argv0; argv[0] itself reads "bun" there), or the package script.
 */
const PROGRAM = Bun.isStandaloneExecutable ? basename(process.argv0 || process.execPath) : "bun run cli";
const DATABASE_NOTE = "The database is the server's: DATABASE_URL (default ./data/plants.sqlite).";

/** `command` names the command whose usage follows the message; without it, the overview. */
class UsageError extends Error {
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message);
  }
}
/** A failure already worded for the operator: printed as is, exit 1. */
class CommandError extends Error {}

type Access = { mode: "read"; purpose: string } | { mode: "write"; migrate: boolean };

/**
 * The one way a command reaches the database, the server's (DATABASE_URL). "read" opens the file
 * as it is, only to read it, and never creates one; "write" creates the folder and the file when
 * missing and brings the schema up to date unless told not to. The database is closed afterwards.
 */
function withDatabase<T>(access: Access, use: (database: { path: string } & ReturnType<typeof openDatabase>) => T): T {
  const config = loadConfig();
  const path = config.databasePath;
  if (access.mode === "read") {
    const { purpose } = access;
    if (path === ":memory:")
      throw new CommandError(`DATABASE_URL is :memory:; there is no database file to ${purpose}`);
    if (!existsSync(path)) throw new CommandError(`no database at ${path} (DATABASE_URL); nothing to ${purpose}`);
  } else {
    ensureDatabaseFolder(config);
  }
  let database: ReturnType<typeof openDatabase>;
  try {
    database = openDatabase({
      path,
      synchronous: config.synchronous,
      readonly: access.mode === "read",
      migrate: access.mode === "write" && access.migrate,
    });
  } catch (error) {
    if (error instanceof ForeignDatabaseError) throw new CommandError(error.message);
    throw new CommandError(`cannot open the database at ${path}: ${faultSummary(error)}`);
  }
  try {
    return use({ path, ...database });
  } finally {
    database.sqlite.close();
  }
}

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? "" : "s"}`;
const iso = (date: Date | null) => (date ? date.toISOString() : "-");

function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? [];
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

function createToken(user: string | undefined): number {
  if (user === undefined) throw new UsageError("token create needs --user <name>", "token create");
  if (!isValidUserName(user)) throw new UsageError(`--user ${USER_NAME_RULE}`, "token create");
  const issued = withDatabase({ mode: "write", migrate: true }, ({ db }) => createTokenStore(db).issue(user));
  console.log(`Created token ${issued.id} for user "${issued.user}". It is shown only this once:`);
  console.log(issued.token);
  return 0;
}

function listTokens(): number {
  const rows = withDatabase({ mode: "write", migrate: true }, ({ db }) => createTokenStore(db).list());
  if (rows.length === 0) {
    console.log("No tokens.");
    return 0;
  }
  const status = (revokedAt: Date | null) => (revokedAt ? `revoked ${iso(revokedAt)}` : "active");
  const cells = rows.map((row) => [
    String(row.id),
    row.user,
    iso(row.createdAt),
    iso(row.lastUsedAt),
    status(row.revokedAt),
  ]);
  console.log(table([["ID", "USER", "CREATED", "LAST USED", "STATUS"], ...cells]));
  return 0;
}

function revokeToken(id: string): number {
  const outcome = withDatabase({ mode: "write", migrate: true }, ({ db }) => createTokenStore(db).revoke(Number(id)));
  if (outcome === "not-found") throw new CommandError(`no token with id ${id}`);
  console.log(outcome === "revoked" ? `Token ${id} revoked.` : `Token ${id} was already revoked.`);
  return 0;
}

function backup(target: string): number {
  const { file, bytes, rows } = withDatabase({ mode: "read", purpose: "back up" }, ({ sqlite }) => {
    try {
      return backupDatabase(sqlite, target);
    } catch (error) {
      throw new CommandError(
        `backup not written: ${error instanceof BackupError ? error.message : faultSummary(error)}`,
      );
    }
  });
  console.log(`Backup written to ${file}`);
  console.log(`Size: ${bytes} bytes`);
  const counts = Object.entries(rows).map(([table, count]) => `${table} ${count}`);
  console.log(`Rows: ${counts.length > 0 ? counts.join(", ") : "no tables"}`);
  return 0;
}

function check(): number {
  const { path, passed, problems } = withDatabase({ mode: "read", purpose: "check" }, ({ path, sqlite }) => ({
    path,
    ...checkDatabase(sqlite, EMBEDDED_MIGRATIONS),
  }));
  console.log(`Checked ${path}`);
  for (const line of passed) console.log(line);
  for (const problem of problems) console.error(`plant-store: ${problem}`);
  console.log(problems.length === 0 ? "All checks passed." : `${plural(problems.length, "problem")} found.`);
  return problems.length === 0 ? 0 : 1;
}

function migrate(): number {
  const { path, pending } = withDatabase({ mode: "write", migrate: false }, ({ path, sqlite, db }) => {
    try {
      const { pending } = migrationStatus(sqlite, EMBEDDED_MIGRATIONS);
      applyMigrations(db, EMBEDDED_MIGRATIONS);
      return { path, pending };
    } catch (error) {
      throw new CommandError(`migration failed and was rolled back: ${faultSummary(error)}`);
    }
  });
  if (pending.length === 0) {
    console.log(`${path} is up to date: no pending migrations.`);
  } else {
    const tags = pending.map((migration) => migration.tag).join(", ");
    console.log(`Applied ${plural(pending.length, "migration")} to ${path}: ${tags}`);
  }
  return 0;
}

interface Command {
  /** What follows the program's name: `token revoke <token-id>`. */
  synopsis: string;
  summary: string;
  /** What the command's own --help adds to the synopsis. */
  details: string[];
  options?: Record<string, { type: "string" }>;
  /** The one argument the command takes, if any: what to say when it is missing, and its rule. */
  operand?: { missing: string; problem?: (value: string) => string | undefined };
  run(values: { user?: string }, operand: string): number;
}

const TOKEN_ID_RULE = "token id must be a positive integer such as 3";
const isTokenId = (value: string) => /^[1-9][0-9]*$/.test(value) && Number.isSafeInteger(Number(value));

const COMMANDS: Record<string, Command> = {
  "token create": {
    synopsis: "token create --user <name>",
    summary: "create the user if needed and print a new token",
    details: [
      "Creates the user if needed and prints a new token, alone on the last line; it is shown only this once.",
      `--user <name> or --user=<name>: the user, whose name ${USER_NAME_RULE}.`,
    ],
    options: { user: { type: "string" } },
    run: ({ user }) => createToken(user),
  },
  "token list": {
    synopsis: "token list",
    summary: "show every token: id, user, created, last used",
    details: ["Shows every token's id, user, creation and last use, and whether it is revoked; never a secret."],
    run: () => listTokens(),
  },
  "token revoke": {
    synopsis: "token revoke <token-id>",
    summary: "revoke a token from its next request on",
    details: ["Revokes the token with this id (see token list): it fails from its very next request on."],
    operand: {
      missing: "token revoke needs a token id (see token list)",
      problem: (id) => (isTokenId(id) ? undefined : TOKEN_ID_RULE),
    },
    run: (_, id) => revokeToken(id),
  },
  backup: {
    synopsis: "backup <file>",
    summary: "copy the database, consistently, while the server runs",
    details: ["Writes a consistent copy of the database to <file>, which must not exist yet; the server may run."],
    operand: {
      missing: "backup needs the file to write",
      problem: (file) => (file ? undefined : "the file name is empty"),
    },
    run: (_, file) => backup(file),
  },
  check: {
    synopsis: "check",
    summary: "integrity and foreign key checks, pending migrations",
    details: ["Reads every page: integrity and foreign key checks, and migrations not yet applied. Changes nothing."],
    run: () => check(),
  },
  migrate: {
    synopsis: "migrate",
    summary: "apply pending migrations",
    details: [
      "Applies pending migrations without starting the server.",
      ...(Bun.isStandaloneExecutable ? [] : ["Also: bun run db:migrate."]),
    ],
    run: () => migrate(),
  },
};

function columns(rows: [string, string][]): string {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `  ${left.padEnd(width)}   ${right}`).join("\n");
}

/** Every command, or those of one group (`token`). */
function overview(group = ""): string {
  const names = Object.keys(COMMANDS).filter((name) => name.startsWith(group));
  const rows = names.map((name): [string, string] => [
    `${PROGRAM} ${COMMANDS[name]?.synopsis}`,
    `${COMMANDS[name]?.summary}`,
  ]);
  return `Usage: ${PROGRAM} <command> [options]

${columns(rows)}

Options take a value as --user bob or --user=bob; --help (or -h) after a command explains it.
${DATABASE_NOTE}`;
}

function usage(name: string): string {
  const command = COMMANDS[name];
  if (!command) return overview();
  return [`Usage: ${PROGRAM} ${command.synopsis}`, "", ...command.details, DATABASE_NOTE].join("\n");
}

/**
 * An argument as it may appear in a message: quoted when it is shorter than any secret this
 * service accepts (a token is 47 characters, METRICS_TOKEN at least 16), else only its length.
 */
function shown(noun: string, value: string): string {
  if (/^[\w.:/@=+-]{0,15}$/.test(value)) return `${noun} ${JSON.stringify(value)}`;
  return `${noun} of ${value.length} characters (not repeated here: it may be a secret)`;
}

type Options = Record<string, { type: "string" | "boolean"; short?: string }>;

/** Words the strict parse refused, named from a lenient parse of the same arguments. */
function whatIsWrong(args: string[], options: Options, command: Command): string {
  const { tokens } = parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true });
  for (const token of tokens) {
    if (token.kind !== "option") continue;
    const option = options[token.name];
    const raw = args[token.index] ?? "";
    // parseArgs reads "-1" as an option; to an operator it is a number given as the operand.
    const asOperand = /^-[0-9]/.test(raw) ? command.operand?.problem?.(raw) : undefined;
    if (!option) return asOperand ?? shown("unknown option", token.rawName);
    const dangling = token.value === undefined || (!token.inlineValue && token.value.startsWith("-"));
    if (option.type === "string" && dangling) return `${token.rawName} needs a value, as ${token.rawName}=<value>`;
    if (option.type === "boolean" && token.value !== undefined) return `${token.rawName} takes no value`;
  }
  return "the arguments could not be read";
}

function parse(name: string, command: Command, args: string[]) {
  const options: Options = { ...command.options, help: { type: "boolean", short: "h" } };
  try {
    return { options, ...parseArgs({ args, options, strict: true, allowPositionals: true, tokens: true }) };
  } catch {
    throw new UsageError(whatIsWrong(args, options, command), name);
  }
}

function runCommand(name: string, command: Command, args: string[]): number {
  const { options, values, positionals, tokens } = parse(name, command, args);
  if (values.help) {
    console.log(usage(name));
    return 0;
  }
  // parseArgs keeps the last of a repeated option; which one the operator meant is unknown.
  const given = tokens.flatMap((token) =>
    token.kind === "option" && options[token.name]?.type === "string" ? [token.name] : [],
  );
  const repeated = given.find((option, index) => given.indexOf(option) < index);
  if (repeated) throw new UsageError(`--${repeated} was given more than once; give it once`, name);

  const stray = positionals[command.operand ? 1 : 0];
  if (stray !== undefined) throw new UsageError(shown("unexpected argument", stray), name);
  const operand = positionals[0];
  if (command.operand) {
    if (operand === undefined) throw new UsageError(command.operand.missing, name);
    const problem = command.operand.problem?.(operand);
    if (problem) throw new UsageError(problem, name);
  }
  return command.run(values as { user?: string }, operand ?? "");
}

function run(args: string[]): number {
  const [first, second] = args;
  if (first === "--help" || first === "-h" || first === "help") {
    console.log(overview());
    return 0;
  }
  if (first === "token" && (second === "--help" || second === "-h")) {
    console.log(overview("token "));
    return 0;
  }
  if (first === undefined) throw new UsageError("a command is needed");
  if (first === "token" && second === undefined) throw new UsageError("token needs a command: create, list or revoke");
  const name = first === "token" ? `token ${second}` : first;
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command)
    throw new UsageError(
      first === "token" ? shown("unknown token command", second ?? "") : shown("unknown command", first),
    );
  return runCommand(name, command, args.slice(name.split(" ").length));
}

try {
  process.exitCode = run(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError) {
    console.error(`plant-store: ${error.message}\n\n${error.command ? usage(error.command) : overview()}`);
    process.exitCode = 2;
  } else if (error instanceof ConfigError || error instanceof CommandError) {
    console.error(`plant-store: ${error.message}`);
    process.exitCode = 1;
  } else {
    console.error(`plant-store: ${faultSummary(error)}`);
    process.exitCode = 1;
  }
}
