// Standard Webhooks signing (https://www.standardwebhooks.com).
const SECRET_PREFIX = "whsec_";
const SECRET_BYTES = 32;

export function newSecret(): string {
  return `${SECRET_PREFIX}${Buffer.from(crypto.getRandomValues(new Uint8Array(SECRET_BYTES))).toString("base64")}`;
}

function keyOf(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error("a webhook secret starts with whsec_");
  return Buffer.from(secret.slice(SECRET_PREFIX.length), "base64");
}

export function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = new Bun.CryptoHasher("sha256", keyOf(secret))
    .update(`${id}.${timestampSeconds}.${body}`)
    .digest("base64");
  return `v1,${mac}`;
}

export function signedHeaders(secret: string, id: string, timestampSeconds: number, body: string) {
  return {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": signature(secret, id, timestampSeconds, body),
  };
}
