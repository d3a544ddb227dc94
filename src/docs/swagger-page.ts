import swaggerCss from "swagger-ui-dist/swagger-ui.css" with { type: "file" };
import swaggerBundle from "swagger-ui-dist/swagger-ui-bundle.js" with { type: "file" };

export const ASSETS_PATH = "/swagger/assets";
export const DOCUMENT_PATH = "/swagger/json";

/** Served by the service itself so the page works with no internet access. */
export const assets = new Map([
  ["swagger-ui-bundle.js", { path: swaggerBundle, type: "text/javascript; charset=utf-8" }],
  ["swagger-ui.css", { path: swaggerCss, type: "text/css; charset=utf-8" }],
]);

/** Ours, for its Content-Security-Policy: one inline script (by hash), no framing (clickjacking). */
export function swaggerPage(persistAuthorization: boolean) {
  const options = JSON.stringify({
    url: DOCUMENT_PATH,
    dom_id: "#swagger-ui",
    // Kept in localStorage only when asked: there any script on this origin can read it later.
    persistAuthorization,
    // The validator badge would fetch from validator.swagger.io, which the policy refuses.
    validatorUrl: null,
  });
  // A token an earlier page left is removed once persisting is off (where storage is refused, it throws).
  const forget = persistAuthorization ? "" : 'try { localStorage.removeItem("authorized"); } catch {}';
  const init = `${forget}\nwindow.ui = SwaggerUIBundle(${options});\n`;
  const hash = new Bun.CryptoHasher("sha256").update(init).digest("base64");
  const html = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8" />
<meta name="viewport" content="width=device-width, initial-scale=1" />
<title>Plant Store</title>
<link rel="stylesheet" href="${ASSETS_PATH}/swagger-ui.css" />
</head>
<body>
<div id="swagger-ui"></div>
<script src="${ASSETS_PATH}/swagger-ui-bundle.js"></script>
<script>${init}</script>
</body>
</html>
`;
  const policy = [
    "default-src 'none'",
    `script-src 'self' 'sha256-${hash}'`,
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join("; ");
  const headers = {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": policy,
    "x-frame-options": "DENY",
  };
  return () => new Response(html, { headers });
}
