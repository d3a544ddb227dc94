import { overview, run, usage } from "./cli/args";
import { UsageError } from "./cli/command";
import { CommandError } from "./cli/database";
import { ConfigError } from "./config";
import { faultSummary } from "./core/fault";

try {
  process.exitCode = await run(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError) {
    console.error(`plant-store: ${error.message}\n\n${error.command ? usage(error.command) : overview()}`);
    process.exitCode = 2;
  } else {
    const worded = error instanceof ConfigError || error instanceof CommandError;
    console.error(`plant-store: ${worded ? error.message : faultSummary(error)}`);
    process.exitCode = 1;
  }
}
