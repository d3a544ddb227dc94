/**
 * The Debian packages the test suite needs, installed with apt-get (as root or through sudo)
 * when missing, so `bun run test` works on a fresh Debian machine.
 */
import { accessSync, constants } from "node:fs";
import { findPgBin } from "./pg-cluster";

const CHROMIUM = "/usr/bin/chromium";
const PYTHON = "/usr/bin/python3";

interface Need {
  pkg: string;
  /** Why the package's part is unusable, or undefined when it works. */
  problem(): string | undefined;
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function pythonImports(module: string): boolean {
  return Bun.spawnSync([PYTHON, "-c", `import ${module}`], { stdio: ["ignore", "ignore", "ignore"] }).success;
}

function pgBinProblem(): string | undefined {
  try {
    findPgBin();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

function needs(postgres: boolean): Need[] {
  const list: Need[] = [
    // tests/process/browser.test.ts drives the system chromium through playwright-core: no browser download.
    { pkg: "chromium", problem: () => (executable(CHROMIUM) ? undefined : `${CHROMIUM} is missing`) },
    // tests/api/ops.test.ts reads /metrics with the Prometheus project's own parser.
    {
      pkg: "python3-prometheus-client",
      problem: () =>
        pythonImports("prometheus_client.parser") ? undefined : `${PYTHON} cannot import prometheus_client`,
    },
    // tests/unit/webhook-send.test.ts makes a certificate for its https receiver.
    { pkg: "openssl", problem: () => (Bun.which("openssl") ? undefined : "openssl is missing") },
  ];
  // The postgres run starts throwaway clusters with initdb and pg_ctl (scripts/pg-cluster.ts).
  if (postgres) list.push({ pkg: "postgresql", problem: pgBinProblem });
  return list;
}

function asRoot(packages: string[]): string[] {
  if (process.getuid?.() === 0) return [];
  if (Bun.which("sudo")) return ["sudo"];
  throw new Error(`cannot install ${packages.join(" ")}: not root and no sudo; install them with apt-get`);
}

async function aptGet(prefix: string[], args: string[]): Promise<void> {
  const proc = Bun.spawn([...prefix, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", ...args], {
    stdin: "inherit", // sudo may ask for a password
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code !== 0) {
    const last = `${out}${err}`.trim().split("\n").at(-1) ?? "";
    throw new Error(`apt-get ${args[0]} failed (exit ${code}): ${last}`);
  }
}

/** The last line: chromium may print warnings before its version. */
function versionLine(argv: string[]): string {
  const result = Bun.spawnSync(argv, { stdout: "pipe", stderr: "ignore" });
  return result.stdout.toString().trim().split("\n").at(-1) ?? "";
}

/** Installs whatever is missing, then prints the versions used; throws a one-line Error on failure. */
export async function provision({ postgres }: { postgres: boolean }): Promise<void> {
  const missing = needs(postgres).filter((need) => need.problem() !== undefined);
  if (missing.length > 0) {
    const packages = missing.map((need) => need.pkg);
    const prefix = asRoot(packages);
    if (!Bun.which("apt-get")) throw new Error(`cannot install ${packages.join(" ")}: apt-get not found`);
    console.log(`installing with apt-get: ${packages.join(" ")}`);
    await aptGet(prefix, ["update", "-qq"]);
    await aptGet(prefix, ["install", "-y", "-qq", ...packages]);
    const still = missing.map((need) => need.problem()).filter((problem) => problem !== undefined);
    if (still.length > 0) throw new Error(`after apt-get install: ${still.join("; ")}`);
  }
  console.log(versionLine([CHROMIUM, "--version"]));
  if (postgres) console.log(versionLine([`${findPgBin()}/postgres`, "--version"]));
}
