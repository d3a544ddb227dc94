CREATE TABLE "plant_change_inbox" (
	"pos" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "plant_change_inbox_pos_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"owner_id" integer NOT NULL,
	"type" text NOT NULL,
	"at" timestamp (3) with time zone NOT NULL,
	"id" bigint NOT NULL,
	"name" text NOT NULL,
	"tag" text
);
--> statement-breakpoint
CREATE TABLE "plant_changes" (
	"seq" bigint PRIMARY KEY NOT NULL,
	"owner_id" integer NOT NULL,
	"type" text NOT NULL,
	"at" timestamp (3) with time zone NOT NULL,
	"id" bigint NOT NULL,
	"name" text NOT NULL,
	"tag" text
);
--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "changes_pruned_through" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "plant_changes_owner_seq_idx" ON "plant_changes" USING btree ("owner_id","seq");