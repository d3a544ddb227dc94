CREATE TABLE "webhook_events" (
	"seq" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "webhook_events_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"owner_id" integer NOT NULL,
	"last_webhook_id" integer NOT NULL,
	"payload" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "webhook_events_owner_seq_idx" ON "webhook_events" USING btree ("owner_id","seq");--> statement-breakpoint
-- As on SQLite (drizzle/sqlite/0007): a created plant writes one event when its owner has an
-- enabled endpoint, with the owner's newest enabled endpoint. Registering takes the owner's
-- advisory lock, so an owner's endpoints commit in id order and the mark is exact. The fan-out
-- is one statement of the store (src/db/postgres/webhook-queries.ts, fanOut), not a trigger:
-- set-based, its events taken FOR UPDATE SKIP LOCKED. Deliveries already pending stay.
DROP TRIGGER "plants_webhook_deliveries" ON "plants";
--> statement-breakpoint
DROP FUNCTION "plants_webhook_deliveries"();
--> statement-breakpoint
CREATE FUNCTION "plants_webhook_events"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	last integer;
BEGIN
	SELECT max("id") INTO last FROM "webhooks" WHERE "owner_id" = NEW."owner_id" AND "disabled_at" IS NULL;
	IF last IS NOT NULL THEN
		INSERT INTO "webhook_events" ("owner_id", "last_webhook_id", "payload", "created_at")
		VALUES (NEW."owner_id", last,
			'{"id":' || NEW."id" || ',"name":' || to_json(NEW."name")::text
				|| CASE WHEN NEW."tag" IS NULL THEN '' ELSE ',"tag":' || to_json(NEW."tag")::text END || '}',
			now());
	END IF;
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "plants_webhook_events" AFTER INSERT ON "plants"
	FOR EACH ROW EXECUTE FUNCTION "plants_webhook_events"();
--> statement-breakpoint
-- As on SQLite: an owner's last endpoint deleted takes its waiting events with it.
CREATE FUNCTION "webhooks_drop_events"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM "webhook_events" WHERE "owner_id" = OLD."owner_id"
		AND NOT EXISTS (SELECT 1 FROM "webhooks" WHERE "owner_id" = OLD."owner_id");
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "webhooks_drop_events" AFTER DELETE ON "webhooks"
	FOR EACH ROW EXECUTE FUNCTION "webhooks_drop_events"();
