/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): secrets are `whsec_` + the
 * base64 of 32 random bytes, and a delivery is signed with HMAC-SHA256 over
 * `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the decoded bytes.
 */
const SECRET_PREFIX = "whsec_";
const SECRET_BYTES = 32;

/** A new endpoint secret, shown to its owner once. */
export function newSecret(): string {
  return `${SECRET_PREFIX}${Buffer.from(crypto.getRandomValues(new Uint8Array(SECRET_BYTES))).toString("base64")}`;
}

/** The key bytes of a `whsec_` secret. */
function keyOf(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error("a webhook secret starts with whsec_");
  return Buffer.from(secret.slice(SECRET_PREFIX.length), "base64");
}

/** The `webhook-signature` header for one attempt: `v1,<base64 HMAC-SHA256>`. */
export function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = new Bun.CryptoHasher("sha256", keyOf(secret))
    .update(`${id}.${timestampSeconds}.${body}`)
    .digest("base64");
  return `v1,${mac}`;
}

/** The three Standard Webhooks headers of one attempt, with the JSON content type. */
export function signedHeaders(secret: string, id: string, timestampSeconds: number, body: string) {
  return {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": signature(secret, id, timestampSeconds, body),
  };
}
