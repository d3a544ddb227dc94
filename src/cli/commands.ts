import { loadConfig } from "../config";
import { faultSummary } from "../core/fault";
import type { TokenListing } from "../core/stores";
import {
  ALL_SCOPES,
  CLI_TOKEN,
  EXPIRES_IN_DAYS_MAX,
  expiryAfterDays,
  isScope,
  isValidUserName,
  SCOPES,
  type Scope,
  scopeBits,
  scopeNames,
  type TokenSpec,
  USER_NAME_RULE,
} from "../core/tokens";
import { applyMigrations } from "../db/migrations";
import { BackupError, backupDatabase } from "../db/sqlite/backup";
import { checkDatabase } from "../db/sqlite/check";
import { EMBEDDED_MIGRATIONS, migrationStatus } from "../db/sqlite/migrations";
import { type Command, type CommandValues, UsageError } from "./command";
import { CommandError, withDatabase, withStores } from "./database";
import { appliedMigrations, iso, table, verdict } from "./format";
import { postgresBackup, postgresCheck, postgresMigrate } from "./postgres";
import { WEBHOOK_COMMANDS } from "./webhooks";

const SCOPE_RULE = `--scope must be one of ${SCOPES.join(", ")}`;
const DAYS_RULE = `--expires-in-days must be an integer from 1 to ${EXPIRES_IN_DAYS_MAX}`;

/** Without --scope, every scope; without --expires-in-days, no expiry. */
function tokenSpec(scopes: string[] | undefined, days: string | undefined): TokenSpec {
  const unknown = scopes?.find((scope) => !isScope(scope));
  if (unknown !== undefined) throw new CommandError(`${SCOPE_RULE}, not ${JSON.stringify(unknown)}`);
  if (days !== undefined && !(/^[1-9][0-9]{0,3}$/.test(days) && Number(days) <= EXPIRES_IN_DAYS_MAX)) {
    throw new CommandError(DAYS_RULE);
  }
  return {
    ...CLI_TOKEN,
    scopes: scopes === undefined ? ALL_SCOPES : scopeBits(scopes as Scope[]),
    expiresAt: days === undefined ? null : expiryAfterDays(Date.now(), Number(days)),
  };
}

async function createToken({ user, scope, "expires-in-days": days }: CommandValues): Promise<number> {
  if (user === undefined) throw new UsageError("token create needs --user <name>", "token create");
  if (!isValidUserName(user)) throw new UsageError(`--user ${USER_NAME_RULE}`, "token create");
  const spec = tokenSpec(scope, days);
  const issued = await withStores(({ tokens }) => tokens.issue(user, spec));
  const expiry = spec.expiresAt === null ? "never expires" : `expires ${iso(new Date(spec.expiresAt))}`;
  const what = `${scopeNames(spec.scopes).join(" ")}; ${expiry}`;
  console.log(`Created token ${issued.id} for user "${issued.user}" (${what}). It is shown only this once:`);
  console.log(issued.token);
  return 0;
}

async function listTokens(): Promise<number> {
  const rows = await withStores(({ tokens }) => tokens.list());
  if (rows.length === 0) {
    console.log("No tokens.");
    return 0;
  }
  const now = Date.now();
  const status = ({ revokedAt, expiresAt }: TokenListing) =>
    revokedAt ? `revoked ${iso(revokedAt)}` : expiresAt && expiresAt.getTime() <= now ? "expired" : "active";
  const cells = rows.map((row) => [
    String(row.id),
    row.user,
    row.name,
    scopeNames(row.scopes).join(" "),
    iso(row.createdAt),
    iso(row.expiresAt),
    iso(row.lastUsedAt),
    status(row),
  ]);
  console.log(table([["ID", "USER", "NAME", "SCOPES", "CREATED", "EXPIRES", "LAST USED", "STATUS"], ...cells]));
  return 0;
}

async function revokeToken(id: string): Promise<number> {
  const outcome = await withStores(({ tokens }) => tokens.revoke(Number(id)));
  if (outcome === "not-found") throw new CommandError(`no token with id ${id}`);
  console.log(outcome === "revoked" ? `Token ${id} revoked.` : `Token ${id} was already revoked.`);
  return 0;
}

async function backup(target: string): Promise<number> {
  const config = loadConfig();
  if (config.database.engine === "postgres") return postgresBackup(config.database, target);
  const { file, bytes, rows } = await withDatabase({ mode: "read", purpose: "back up" }, ({ sqlite }) => {
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

async function check(): Promise<number> {
  const config = loadConfig();
  if (config.database.engine === "postgres") return postgresCheck(config.database);
  const { path, passed, problems } = await withDatabase({ mode: "read", purpose: "check" }, ({ path, sqlite }) => ({
    path,
    ...checkDatabase(sqlite, EMBEDDED_MIGRATIONS),
  }));
  console.log(`Checked ${path}`);
  for (const line of passed) console.log(line);
  return verdict(problems);
}

async function migrate(): Promise<number> {
  const config = loadConfig();
  if (config.database.engine === "postgres") return postgresMigrate(config.database);
  const { path, pending } = await withDatabase({ mode: "write" }, ({ path, sqlite, db }) => {
    try {
      const { pending } = migrationStatus(sqlite, EMBEDDED_MIGRATIONS);
      applyMigrations(db, EMBEDDED_MIGRATIONS);
      return { path, pending };
    } catch (error) {
      throw new CommandError(`migration failed and was rolled back: ${faultSummary(error)}`);
    }
  });
  appliedMigrations(path, pending);
  return 0;
}

const TOKEN_ID_RULE = "token id must be a positive integer such as 3";
const isTokenId = (value: string) => /^[1-9][0-9]*$/.test(value) && Number.isSafeInteger(Number(value));

export const COMMANDS: Record<string, Command> = {
  "token create": {
    synopsis: "token create --user <name> [--scope <s>]... [--expires-in-days <n>]",
    summary: "create the user if needed and print a new token",
    details: [
      "Creates the user if needed and prints a new token, alone on the last line; it is shown only this once.",
      `--user <name> or --user=<name>: the user, whose name ${USER_NAME_RULE}.`,
      `--scope <s>, once per scope: what the token may do, among ${SCOPES.join(", ")}; all four without it.`,
      `--expires-in-days <n>: it expires n days from now (1 to ${EXPIRES_IN_DAYS_MAX}); never without it.`,
    ],
    options: {
      user: { type: "string" },
      scope: { type: "string", multiple: true },
      "expires-in-days": { type: "string" },
    },
    run: (values) => createToken(values),
  },
  "token list": {
    synopsis: "token list",
    summary: "show every token: id, user, name, scopes, expiry, last use",
    details: [
      "Shows every token's id, user, name, scopes, creation, expiry and last use, and whether it is revoked or expired; never a secret.",
    ],
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
  ...WEBHOOK_COMMANDS,
};
