import { createTokenStore, isValidUserName, USER_NAME_RULE } from "./auth/tokens";
import { ConfigError, ensureDatabaseFolder, loadConfig } from "./config";
import { openDatabase } from "./db/client";
import { faultSummary } from "./http/errors";

const USAGE = `Usage:
  bun run cli token create --user <name>   create the user if needed and print a new token
  bun run cli token list                    show every token: id, user, created, last used
  bun run cli token revoke <token-id>       revoke a token from its next request on

The database is the server's: DATABASE_URL (default ./data/plants.sqlite).`;

class UsageError extends Error {}

function openStore() {
  const config = loadConfig();
  ensureDatabaseFolder(config);
  const { sqlite, db } = openDatabase({ path: config.databasePath, synchronous: config.synchronous });
  return { sqlite, tokens: createTokenStore(db) };
}

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

function run(args: string[]): number {
  const [group, command, ...rest] = args;
  if (group === "help" || group === "--help" || group === "-h" || group === undefined) {
    console.log(USAGE);
    return group === undefined ? 2 : 0;
  }
  if (group !== "token") throw new UsageError(`unknown command "${group}"`);

  switch (command) {
    case "create": {
      const flag = rest.indexOf("--user");
      const user = flag >= 0 ? rest[flag + 1] : undefined;
      if (!user) throw new UsageError("token create needs --user <name>");
      if (!isValidUserName(user)) throw new UsageError(`--user ${USER_NAME_RULE}`);
      const { sqlite, tokens } = openStore();
      const issued = tokens.issue(user);
      sqlite.close();
      console.log(`Created token ${issued.id} for user "${issued.user}". It is shown only this once:`);
      console.log(issued.token);
      return 0;
    }
    case "list": {
      const { sqlite, tokens } = openStore();
      const rows = tokens.list();
      sqlite.close();
      if (rows.length === 0) {
        console.log("No tokens.");
        return 0;
      }
      console.log(
        table([
          ["ID", "USER", "CREATED", "LAST USED", "STATUS"],
          ...rows.map((row) => [
            String(row.id),
            row.user,
            iso(row.createdAt),
            iso(row.lastUsedAt),
            row.revokedAt ? `revoked ${iso(row.revokedAt)}` : "active",
          ]),
        ]),
      );
      return 0;
    }
    case "revoke": {
      const id = rest[0];
      if (!id || !/^[0-9]{1,15}$/.test(id)) throw new UsageError("token revoke needs a token id (see token list)");
      const { sqlite, tokens } = openStore();
      const outcome = tokens.revoke(Number(id));
      sqlite.close();
      if (outcome === "not-found") {
        console.error(`plant-store: no token with id ${id}`);
        return 1;
      }
      console.log(outcome === "revoked" ? `Token ${id} revoked.` : `Token ${id} was already revoked.`);
      return 0;
    }
    default:
      throw new UsageError(`unknown token command "${command ?? ""}"`);
  }
}

try {
  process.exitCode = run(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError) {
    console.error(`plant-store: ${error.message}\n\n${USAGE}`);
    process.exitCode = 2;
  } else if (error instanceof ConfigError) {
    console.error(`plant-store: ${error.message}`);
    process.exitCode = 1;
  } else {
    console.error(`plant-store: ${faultSummary(error)}`);
    process.exitCode = 1;
  }
}
