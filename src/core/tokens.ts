/** A recognisable prefix lets secret scanners find leaked tokens. */
export const TOKEN_PREFIX = "pst_";
/** last_used_at is written at most this often per token, so reads do not become writes. */
export const LAST_USED_GRANULARITY_MS = 60_000;

export const USER_NAME_RULE = "must be 1 to 64 characters of letters, digits, '.', '_' or '-'";
const USER_NAME = /^[A-Za-z0-9._-]{1,64}$/;

export type Clock = () => number;

export interface AuthenticatedUser {
  id: number;
  tokenId: number;
  /** Scope bits (SCOPES). */
  scopes: number;
  /** Ms since the epoch; null: never. */
  expiresAt: number | null;
  /** Past `expiresAt`: refused with 401 (auth/plugin.ts). */
  expired: boolean;
}

export interface IssuedToken {
  id: number;
  user: string;
  /** The only time the secret exists outside the client: show it once, never store it. */
  token: string;
}

export function generateToken(): string {
  return TOKEN_PREFIX + Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
}

export function hashToken(token: string): string {
  return Bun.SHA256.hash(token, "hex") as string;
}

export function isValidUserName(name: string): boolean {
  return USER_NAME.test(name);
}

/** What a token may do; each route declares the one it needs (auth/plugin.ts). */
export const SCOPES = ["plants:read", "plants:write", "webhooks", "tokens"] as const;
export type Scope = (typeof SCOPES)[number];
/** Stored as a bit set, one bit per scope in SCOPES' order. */
export const ALL_SCOPES = (1 << SCOPES.length) - 1;
export const scopeBit = (scope: Scope) => 1 << SCOPES.indexOf(scope);
export const scopeBits = (scopes: readonly Scope[]) => scopes.reduce((bits, scope) => bits | scopeBit(scope), 0);
export const scopeNames = (bits: number): Scope[] => SCOPES.filter((scope) => (bits & scopeBit(scope)) !== 0);
export const isScope = (value: string): value is Scope => (SCOPES as readonly string[]).includes(value);

export const TOKEN_NAME_MAX = 100;
export const EXPIRES_IN_DAYS_MAX = 3650;
export const MAX_TOKENS_PER_USER = 100;
const DAY_MS = 86_400_000;
export const expiryAfterDays = (now: number, days: number) => now + days * DAY_MS;

/** What a new token is: its name, scopes (bits) and expiry (ms since the epoch, or none). */
export interface TokenSpec {
  name: string;
  scopes: number;
  expiresAt: number | null;
}

/** The CLI's token without options, and every token that predates scopes. */
export const CLI_TOKEN: TokenSpec = { name: "cli", scopes: ALL_SCOPES, expiresAt: null };
/** The token a new database's first start prints. */
export const FIRST_TOKEN: TokenSpec = { name: "first start", scopes: ALL_SCOPES, expiresAt: null };
