-- The per-token request budget, shared by every instance (src/db/postgres/rate-limit.ts).
-- UNLOGGED: no WAL for a counter updated on every request; a crash empties it, which only
-- gives every token a full budget again. Not in the Drizzle schema: only raw SQL reads it.
CREATE UNLOGGED TABLE "rate_limits" (
	"key" bigint PRIMARY KEY,
	"tokens" double precision NOT NULL,
	"updated_at" double precision NOT NULL
);
