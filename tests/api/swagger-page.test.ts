import { describe, expect, test } from "bun:test";
import { makeTestApp } from "../support/helpers";

const sha256 = (text: string) => new Bun.CryptoHasher("sha256").update(text).digest("base64");

describe("the Swagger page", () => {
  test.each([
    ["by default", false],
    ["with SWAGGER_PERSIST_AUTHORIZATION=true", true],
  ])("%s: a policy that allows its own assets and its one inline script only, and no framing", async (_, persist) => {
    const response = await (await makeTestApp({ swaggerPersistAuthorization: persist })).call("GET", "/swagger");
    expect(response.status).toBe(200);
    const html = await response.text();
    const inline = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((match) => match[1] as string);
    expect(inline).toHaveLength(1);
    // Nothing else inline: no style element or attribute, no event handler attribute.
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    expect(response.headers.get("content-security-policy")).toBe(
      [
        "default-src 'none'",
        `script-src 'self' 'sha256-${sha256(inline[0] as string)}'`,
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "form-action 'none'",
      ].join("; "),
    );
    expect(response.headers.get("x-frame-options")).toBe("DENY");

    // Swagger UI keeps the token for the tab only unless asked, and then drops one an
    // earlier page stored.
    const settings = JSON.parse(/SwaggerUIBundle\((\{.*\})\)/.exec(html)?.[1] ?? "null");
    expect(settings).toEqual({
      url: "/swagger/json",
      dom_id: "#swagger-ui",
      persistAuthorization: persist,
      validatorUrl: null,
    });
    expect(inline[0]?.includes('localStorage.removeItem("authorized")')).toBe(!persist);
  });

  test("/favicon.ico, which browsers ask for with every page, is a tiny PNG rather than a 404", async () => {
    const response = await (await makeTestApp()).call("GET", "/favicon.ico");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("image/png");
    const bytes = new Uint8Array(await response.arrayBuffer());
    expect([...bytes.subarray(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47]);
    expect(response.headers.get("cache-control")).toContain("max-age=");
  });
});
