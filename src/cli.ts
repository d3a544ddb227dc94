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
  } else if (error instanceof ConfigError || error instanceof CommandError) {
    console.error(`plant-store: ${error.message}`);
    process.exitCode = 1;
  } else {
    console.error(`plant-store: ${faultSummary(error)}`);
    process.exitCode = 1;
  }
}
