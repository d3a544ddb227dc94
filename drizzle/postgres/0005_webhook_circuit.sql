DROP INDEX "webhook_deliveries_due_idx";--> statement-breakpoint
ALTER TABLE "webhooks" ADD COLUMN "consecutive_failures" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "webhooks" ADD COLUMN "last_failed_at" timestamp (3) with time zone;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_endpoint_due_idx" ON "webhook_deliveries" USING btree ("webhook_id","next_attempt_at") WHERE "webhook_deliveries"."next_attempt_at" IS NOT NULL;--> statement-breakpoint
-- As in 0003, and recording an attempt also keeps its endpoint's run of failures, which the
-- dispatcher's claim reads as the endpoint's circuit (src/webhooks/rules.ts): a 2xx ends the
-- run, any other outcome (a 410 included) lengthens it and notes when that attempt ended.
CREATE OR REPLACE FUNCTION "webhook_attempts_apply"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	endpoint integer;
BEGIN
	UPDATE "webhook_deliveries"
	SET "attempts" = NEW."attempt", "last_status" = NEW."status_code", "status" = NEW."outcome",
		"next_attempt_at" = CASE WHEN NEW."outcome" = 'pending'
			THEN NEW."at" + NEW."retry_in_ms" * interval '1 millisecond' END
	WHERE "seq" = NEW."delivery_seq"
	RETURNING "webhook_id" INTO endpoint;
	IF NEW."status_code" = 410 THEN
		UPDATE "webhooks" SET "disabled_at" = NEW."at" WHERE "id" = endpoint AND "disabled_at" IS NULL;
		UPDATE "webhook_deliveries" SET "status" = 'failed', "next_attempt_at" = NULL
		WHERE "webhook_id" = endpoint AND "status" = 'pending';
	END IF;
	IF NEW."outcome" = 'delivered' THEN
		UPDATE "webhooks" SET "consecutive_failures" = 0 WHERE "id" = endpoint AND "consecutive_failures" > 0;
	ELSE
		UPDATE "webhooks"
		SET "consecutive_failures" = "consecutive_failures" + 1,
			"last_failed_at" = NEW."at" + NEW."duration_ms" * interval '1 millisecond'
		WHERE "id" = endpoint;
	END IF;
	RETURN NULL;
END $$;
--> statement-breakpoint
-- As in 0003, but a delivery's id starts with the time in milliseconds (12 hex digits) before
-- 20 hex digits of a random UUID: still `msg_` and 32 hex digits, and new ids land at the end
-- of their unique index instead of anywhere in it (docs/decisions/0006-webhook-budget.md).
CREATE OR REPLACE FUNCTION "plants_webhook_deliveries"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO "webhook_deliveries" ("id", "webhook_id", "payload", "created_at", "next_attempt_at")
	SELECT 'msg_' || lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint), 12, '0')
			|| substr(replace(gen_random_uuid()::text, '-', ''), 1, 20),
		"webhooks"."id",
		'{"id":' || NEW."id" || ',"name":' || to_json(NEW."name")::text
			|| CASE WHEN NEW."tag" IS NULL THEN '' ELSE ',"tag":' || to_json(NEW."tag")::text END || '}',
		now(), now()
	FROM "webhooks" WHERE "webhooks"."owner_id" = NEW."owner_id" AND "webhooks"."disabled_at" IS NULL;
	RETURN NULL;
END $$;
