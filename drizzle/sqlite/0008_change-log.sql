CREATE TABLE `plant_changes` (
	`seq` integer PRIMARY KEY NOT NULL,
	`owner_id` integer NOT NULL,
	`type` text NOT NULL,
	`at` integer NOT NULL,
	`id` integer NOT NULL,
	`name` text NOT NULL,
	`tag` text
);
--> statement-breakpoint
CREATE INDEX `plant_changes_owner_seq_idx` ON `plant_changes` (`owner_id`,`seq`);--> statement-breakpoint
ALTER TABLE `users` ADD `changes_pruned_through` integer DEFAULT 0 NOT NULL;