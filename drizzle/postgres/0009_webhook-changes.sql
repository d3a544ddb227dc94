-- As on SQLite (drizzle/sqlite/0009): webhooks fed by the change log. Events still waiting are
-- fanned out first, as the dispatcher's claim did (src/db/postgres/webhook-queries.ts at 0008).
INSERT INTO "webhook_deliveries" ("id", "webhook_id", "payload", "created_at", "next_attempt_at")
SELECT 'msg_' || lpad(to_hex((extract(epoch FROM e."created_at") * 1000)::bigint), 12, '0')
		|| substr(replace(gen_random_uuid()::text, '-', ''), 1, 20),
	w."id", e."payload", e."created_at", e."created_at"
FROM "webhook_events" e JOIN "webhooks" w
	ON w."owner_id" = e."owner_id" AND w."id" <= e."last_webhook_id" AND w."disabled_at" IS NULL
ORDER BY e."seq", w."id";
--> statement-breakpoint
DROP TRIGGER "plants_webhook_events" ON "plants";
--> statement-breakpoint
DROP FUNCTION "plants_webhook_events"();
--> statement-breakpoint
DROP TRIGGER "webhooks_drop_events" ON "webhooks";
--> statement-breakpoint
DROP FUNCTION "webhooks_drop_events"();
--> statement-breakpoint
DROP TABLE "webhook_events" CASCADE;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD COLUMN "type" text DEFAULT 'plant.created' NOT NULL;--> statement-breakpoint
ALTER TABLE "webhooks" ADD COLUMN "events" text;--> statement-breakpoint
ALTER TABLE "webhooks" ADD COLUMN "change_cursor" bigint DEFAULT 0 NOT NULL;
--> statement-breakpoint
-- Every endpoint starts past the changes already in its owner's log (changes still in the inbox
-- get larger seqs: their plants may be delivered twice, which at-least-once allows).
UPDATE "webhooks" SET "change_cursor" = coalesce((SELECT max("seq") FROM "plant_changes" WHERE "owner_id" = "webhooks"."owner_id"), 0);
