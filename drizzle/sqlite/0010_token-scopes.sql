ALTER TABLE `tokens` ADD `name` text DEFAULT 'cli' NOT NULL;--> statement-breakpoint
ALTER TABLE `tokens` ADD `scopes` integer DEFAULT 15 NOT NULL;--> statement-breakpoint
ALTER TABLE `tokens` ADD `expires_at` integer;