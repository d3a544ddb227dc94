CREATE TABLE `webhook_attempts` (
	`delivery_seq` integer NOT NULL,
	`attempt` integer NOT NULL,
	`at` integer NOT NULL,
	`status_code` integer,
	`duration_ms` integer NOT NULL,
	`error` text,
	`outcome` text NOT NULL,
	`retry_in_ms` integer,
	PRIMARY KEY(`delivery_seq`, `attempt`),
	FOREIGN KEY (`delivery_seq`) REFERENCES `webhook_deliveries`(`seq`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`webhook_id` integer NOT NULL,
	`payload` text NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_status` integer,
	`created_at` integer NOT NULL,
	`next_attempt_at` integer,
	FOREIGN KEY (`webhook_id`) REFERENCES `webhooks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_deliveries_id_unique` ON `webhook_deliveries` (`id`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_webhook_seq_idx` ON `webhook_deliveries` (`webhook_id`,`seq`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_due_idx` ON `webhook_deliveries` (`next_attempt_at`) WHERE "webhook_deliveries"."next_attempt_at" IS NOT NULL;--> statement-breakpoint
CREATE TABLE `webhooks` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`owner_id` integer NOT NULL,
	`url` text NOT NULL,
	`secret` text NOT NULL,
	`created_at` integer NOT NULL,
	`disabled_at` integer,
	FOREIGN KEY (`owner_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `webhooks_owner_id_idx` ON `webhooks` (`owner_id`);--> statement-breakpoint
-- The outbox (src/webhooks): a created plant's deliveries are inserted by the plant's own
-- INSERT, one per enabled endpoint of its owner, so they commit with it and group commit's one
-- statement per write still holds. A duplicate skipped by ON CONFLICT DO NOTHING fires nothing.
CREATE TRIGGER `plants_webhook_deliveries` AFTER INSERT ON `plants`
BEGIN
	INSERT INTO `webhook_deliveries` (`id`, `webhook_id`, `payload`, `created_at`, `next_attempt_at`)
	SELECT 'msg_' || lower(hex(randomblob(16))), `webhooks`.`id`,
		CASE WHEN NEW.`tag` IS NULL THEN json_object('id', NEW.`id`, 'name', NEW.`name`)
			ELSE json_object('id', NEW.`id`, 'name', NEW.`name`, 'tag', NEW.`tag`) END,
		CAST(unixepoch('subsec') * 1000 AS INTEGER), CAST(unixepoch('subsec') * 1000 AS INTEGER)
	FROM `webhooks` WHERE `webhooks`.`owner_id` = NEW.`owner_id` AND `webhooks`.`disabled_at` IS NULL;
END;
--> statement-breakpoint
-- Recording an attempt applies it: to its delivery, and for a 410 to its endpoint (disabled)
-- and that endpoint's other pending deliveries (failed). One statement for the dispatcher.
CREATE TRIGGER `webhook_attempts_apply` AFTER INSERT ON `webhook_attempts`
BEGIN
	UPDATE `webhook_deliveries`
	SET `attempts` = NEW.`attempt`, `last_status` = NEW.`status_code`, `status` = NEW.`outcome`,
		`next_attempt_at` = CASE WHEN NEW.`outcome` = 'pending' THEN NEW.`at` + NEW.`retry_in_ms` END
	WHERE `seq` = NEW.`delivery_seq`;
	UPDATE `webhooks` SET `disabled_at` = NEW.`at`
	WHERE NEW.`status_code` = 410 AND `disabled_at` IS NULL
		AND `id` = (SELECT `webhook_id` FROM `webhook_deliveries` WHERE `seq` = NEW.`delivery_seq`);
	UPDATE `webhook_deliveries` SET `status` = 'failed', `next_attempt_at` = NULL
	WHERE NEW.`status_code` = 410 AND `status` = 'pending'
		AND `webhook_id` = (SELECT `webhook_id` FROM `webhook_deliveries` WHERE `seq` = NEW.`delivery_seq`);
END;
