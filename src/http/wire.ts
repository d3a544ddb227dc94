import { cors } from "@elysiajs/cors";
import { Elysia } from "elysia";

/** What every response carries, and CORS headers only for the configured origins. */
export function wireDefaults(corsOrigins: readonly string[]) {
  const app = new Elysia({ name: "wire-defaults" }).headers({ "x-content-type-options": "nosniff" });
  if (corsOrigins.length === 0) return app;
  const allowed = new Set(corsOrigins);
  return app.use(
    cors({
      // A function, so the match is exact: the plugin's string matching ignores the scheme.
      origin: (request) => allowed.has(request.headers.get("origin") ?? ""),
      methods: ["GET", "POST", "PUT", "PATCH", "DELETE"],
      allowedHeaders: [
        "authorization",
        "content-type",
        "idempotency-key",
        "if-match",
        "if-none-match",
        "last-event-id",
      ],
      exposeHeaders: [
        "changes-cursor",
        "etag",
        "idempotent-replayed",
        "link",
        "ratelimit",
        "ratelimit-policy",
        "retry-after",
        "www-authenticate",
        "x-request-id",
      ],
      credentials: false,
      maxAge: 600,
    }),
  );
}
