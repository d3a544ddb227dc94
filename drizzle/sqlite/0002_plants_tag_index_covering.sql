DROP INDEX `plants_owner_tag_id_idx`;--> statement-breakpoint
CREATE INDEX `plants_owner_tag_id_name_idx` ON `plants` (`owner_id`,`tag`,`id`,`name`);