import { describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { newSecret, signature, signedHeaders } from "../../src/webhooks/signing";

describe("Standard Webhooks signing", () => {
  test("the specification's known-answer vector", () => {
    expect(
      signature(
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1614265330,
        '{"test": 2432232314}',
      ),
    ).toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  });

  test("the standardwebhooks package verifies what we sign, exact int64 body included, and refuses a changed body", () => {
    const secret = newSecret();
    const body = '{"id":9223372036854775807,"name":"Fern","tag":"shade"}';
    const now = Math.floor(Date.now() / 1000);
    const headers = signedHeaders(secret, "msg_test", now, body);
    const verifier = new Webhook(secret);
    expect(verifier.verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => verifier.verify(body.replace("Fern", "Fem"), headers)).toThrow();
    expect(() => new Webhook(newSecret()).verify(body, headers)).toThrow();
  });

  test("secrets are whsec_ and the base64 of 32 random bytes, never the same twice", () => {
    const secrets = new Set(Array.from({ length: 100 }, () => newSecret()));
    expect(secrets.size).toBe(100);
    for (const secret of secrets) {
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(Buffer.from(secret.slice(6), "base64")).toHaveLength(32);
    }
  });

  test("a secret without the whsec_ prefix is refused rather than used as a key", () => {
    expect(() => signature("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_x", 1, "{}")).toThrow(/whsec_/);
  });
});
