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
