/** An invalid setting; its message is the one line printed at start-up. */
export class ConfigError extends Error {}

export type Env = Record<string, string | undefined>;

export function integerSetting(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === "") return fallback;
  if (!/^[0-9]+$/.test(raw) || Number(raw) < min || Number(raw) > max)
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}`);
  return Number(raw);
}

export function choiceSetting<T extends string>(env: Env, name: string, choices: readonly T[], fallback: T): T {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === "") return fallback;
  if (!(choices as readonly string[]).includes(raw))
    throw new ConfigError(`${name} must be one of ${choices.join(", ")}`);
  return raw as T;
}
