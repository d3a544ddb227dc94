import { parseArgs } from "node:util";
import { type Command, type CommandValues, UsageError } from "./command";
import { COMMANDS } from "./commands";
import { PROGRAM } from "./format";

const DATABASE_NOTE = "The database is the server's: DATABASE_URL (default ./data/plants.sqlite).";

function columns(rows: [string, string][]): string {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `  ${left.padEnd(width)}   ${right}`).join("\n");
}

export function overview(group = ""): string {
  const rows = Object.entries(COMMANDS)
    .filter(([name]) => name.startsWith(group))
    .map(([, command]): [string, string] => [`${PROGRAM} ${command.synopsis}`, command.summary]);
  return `Usage: ${PROGRAM} <command> [options]

${columns(rows)}

Options take a value as --user bob or --user=bob; --help (or -h) after a command explains it.
${DATABASE_NOTE}`;
}

export function usage(name: string): string {
  const command = COMMANDS[name];
  if (!command) return overview();
  return [`Usage: ${PROGRAM} ${command.synopsis}`, "", ...command.details, DATABASE_NOTE].join("\n");
}

/** Quoted only when shorter than any secret this service accepts (METRICS_TOKEN has 16 or more). */
function shown(noun: string, value: string): string {
  if (/^[\w.:/@=+-]{0,15}$/.test(value)) return `${noun} ${JSON.stringify(value)}`;
  return `${noun} of ${value.length} characters (not repeated here: it may be a secret)`;
}

type Options = Record<string, { type: "string" | "boolean"; short?: string; multiple?: boolean }>;

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

function runCommand(name: string, command: Command, args: string[]): number | Promise<number> {
  const { options, values, positionals, tokens } = parse(name, command, args);
  if (values.help) {
    console.log(usage(name));
    return 0;
  }
  // parseArgs keeps the last of a repeated option; which one the operator meant is unknown.
  const given = tokens.flatMap((token) =>
    token.kind === "option" && options[token.name]?.type === "string" && !options[token.name]?.multiple
      ? [token.name]
      : [],
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
  return command.run(values as CommandValues, operand ?? "");
}

/** `token` → create, list, revoke. */
function wordsOf(group: string): string[] {
  return Object.keys(COMMANDS).flatMap((name) => (name.startsWith(`${group} `) ? [name.slice(group.length + 1)] : []));
}

const inWords = (words: string[]) =>
  words.length < 2 ? words.join("") : `${words.slice(0, -1).join(", ")} or ${words.at(-1)}`;

export function run(args: string[]): number | Promise<number> {
  const [first, second] = args;
  if (first === "--help" || first === "-h" || first === "help") {
    console.log(overview());
    return 0;
  }
  if (first === undefined) throw new UsageError("a command is needed");
  const words = wordsOf(first);
  const grouped = words.length > 0;
  if (grouped && (second === "--help" || second === "-h")) {
    console.log(overview(`${first} `));
    return 0;
  }
  if (grouped && second === undefined) throw new UsageError(`${first} needs a command: ${inWords(words)}`);
  const name = grouped ? `${first} ${second}` : first;
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command)
    throw new UsageError(grouped ? shown(`unknown ${first} command`, second ?? "") : shown("unknown command", first));
  return runCommand(name, command, args.slice(name.split(" ").length));
}
