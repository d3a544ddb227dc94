export interface CommandValues {
  user?: string;
  scope?: string[];
  "expires-in-days"?: string;
}

export interface Command {
  /** What follows the program's name: `token revoke <token-id>`. */
  synopsis: string;
  summary: string;
  /** What its --help adds to the synopsis. */
  details: string[];
  /** `multiple`: the option may be given more than once (each value kept). */
  options?: Record<string, { type: "string"; multiple?: boolean }>;
  /** The one argument the command takes, if any: what to say when it is missing, and its rule. */
  operand?: { missing: string; problem?: (value: string) => string | undefined };
  run(values: CommandValues, operand: string): number | Promise<number>;
}

/** `command` names the command whose usage follows the message; else the overview does. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message);
  }
}
