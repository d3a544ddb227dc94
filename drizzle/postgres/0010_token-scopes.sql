ALTER TABLE "tokens" ADD COLUMN "name" text DEFAULT 'cli' NOT NULL;--> statement-breakpoint
ALTER TABLE "tokens" ADD COLUMN "scopes" integer DEFAULT 15 NOT NULL;--> statement-breakpoint
ALTER TABLE "tokens" ADD COLUMN "expires_at" timestamp (3) with time zone;