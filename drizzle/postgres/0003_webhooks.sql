CREATE TABLE "webhook_attempts" (
	"delivery_seq" bigint NOT NULL,
	"attempt" integer NOT NULL,
	"at" timestamp (3) with time zone NOT NULL,
	"status_code" integer,
	"duration_ms" integer NOT NULL,
	"error" text,
	"outcome" text NOT NULL,
	"retry_in_ms" integer,
	CONSTRAINT "webhook_attempts_delivery_seq_attempt_pk" PRIMARY KEY("delivery_seq","attempt")
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"seq" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "webhook_deliveries_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"id" text NOT NULL,
	"webhook_id" integer NOT NULL,
	"payload" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_status" integer,
	"created_at" timestamp (3) with time zone NOT NULL,
	"next_attempt_at" timestamp (3) with time zone,
	CONSTRAINT "webhook_deliveries_id_unique" UNIQUE("id")
);
--> statement-breakpoint
CREATE TABLE "webhooks" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "webhooks_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"owner_id" integer NOT NULL,
	"url" text NOT NULL,
	"secret" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"disabled_at" timestamp (3) with time zone
);
--> statement-breakpoint
ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_delivery_seq_webhook_deliveries_seq_fk" FOREIGN KEY ("delivery_seq") REFERENCES "public"."webhook_deliveries"("seq") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_webhook_id_webhooks_id_fk" FOREIGN KEY ("webhook_id") REFERENCES "public"."webhooks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhooks" ADD CONSTRAINT "webhooks_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_webhook_seq_idx" ON "webhook_deliveries" USING btree ("webhook_id","seq");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_due_idx" ON "webhook_deliveries" USING btree ("next_attempt_at") WHERE "webhook_deliveries"."next_attempt_at" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "webhooks_owner_id_idx" ON "webhooks" USING btree ("owner_id");--> statement-breakpoint
-- The outbox, as on SQLite (drizzle/sqlite/0003_webhooks.sql): the plant's INSERT writes its
-- deliveries. The payload is built as SQLite's json_object writes it (compact, keys in
-- NewPlant's order, the id an exact integer), so both engines send the same bytes.
CREATE FUNCTION "plants_webhook_deliveries"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO "webhook_deliveries" ("id", "webhook_id", "payload", "created_at", "next_attempt_at")
	SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), "webhooks"."id",
		'{"id":' || NEW."id" || ',"name":' || to_json(NEW."name")::text
			|| CASE WHEN NEW."tag" IS NULL THEN '' ELSE ',"tag":' || to_json(NEW."tag")::text END || '}',
		now(), now()
	FROM "webhooks" WHERE "webhooks"."owner_id" = NEW."owner_id" AND "webhooks"."disabled_at" IS NULL;
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "plants_webhook_deliveries" AFTER INSERT ON "plants"
	FOR EACH ROW EXECUTE FUNCTION "plants_webhook_deliveries"();
--> statement-breakpoint
CREATE FUNCTION "webhook_attempts_apply"() RETURNS trigger LANGUAGE plpgsql AS $$
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
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "webhook_attempts_apply" AFTER INSERT ON "webhook_attempts"
	FOR EACH ROW EXECUTE FUNCTION "webhook_attempts_apply"();
