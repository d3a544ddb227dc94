CREATE TABLE "plant_changes" (
	"pos" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "plant_changes_pos_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"seq" bigint,
	"owner_id" integer NOT NULL,
	"type" text NOT NULL,
	"at" timestamp (3) with time zone NOT NULL,
	"id" bigint NOT NULL,
	"name" text NOT NULL,
	"tag" text,
	CONSTRAINT "plant_changes_seq_unique" UNIQUE("seq")
);
--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "changes_pruned_through" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "plant_changes_owner_seq_idx" ON "plant_changes" USING btree ("owner_id","seq");--> statement-breakpoint
CREATE INDEX "plant_changes_unstamped_idx" ON "plant_changes" USING btree ("pos") WHERE "plant_changes"."seq" IS NULL;