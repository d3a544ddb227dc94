DROP INDEX `webhook_deliveries_due_idx`;--> statement-breakpoint
CREATE INDEX `webhook_deliveries_endpoint_due_idx` ON `webhook_deliveries` (`webhook_id`,`next_attempt_at`) WHERE "webhook_deliveries"."next_attempt_at" IS NOT NULL;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `consecutive_failures` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `last_failed_at` integer;--> statement-breakpoint
-- As in 0003, and recording an attempt also keeps its endpoint's run of failures, which the
-- dispatcher's claim reads as the endpoint's circuit (src/webhooks/rules.ts): a 2xx ends the
-- run, any other outcome (a 410 included) lengthens it and notes when that attempt ended.
DROP TRIGGER `webhook_attempts_apply`;
--> statement-breakpoint
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
	UPDATE `webhooks`
	SET `consecutive_failures` = CASE WHEN NEW.`outcome` = 'delivered' THEN 0 ELSE `consecutive_failures` + 1 END,
		`last_failed_at` = CASE WHEN NEW.`outcome` = 'delivered' THEN `last_failed_at` ELSE NEW.`at` + NEW.`duration_ms` END
	WHERE `id` = (SELECT `webhook_id` FROM `webhook_deliveries` WHERE `seq` = NEW.`delivery_seq`)
		AND (NEW.`outcome` <> 'delivered' OR `consecutive_failures` > 0);
END;
--> statement-breakpoint
-- As in 0003, but a delivery's id starts with the time in milliseconds (12 hex digits) before
-- 80 random bits: still `msg_` and 32 hex digits, and new ids now land at the end of their
-- unique index instead of anywhere in it, which made every created plant with endpoints write
-- pages all over the index (docs/decisions/0006-webhook-budget.md).
DROP TRIGGER `plants_webhook_deliveries`;
--> statement-breakpoint
CREATE TRIGGER `plants_webhook_deliveries` AFTER INSERT ON `plants`
BEGIN
	INSERT INTO `webhook_deliveries` (`id`, `webhook_id`, `payload`, `created_at`, `next_attempt_at`)
	SELECT 'msg_' || printf('%012x', CAST(unixepoch('subsec') * 1000 AS INTEGER)) || lower(hex(randomblob(10))),
		`webhooks`.`id`,
		CASE WHEN NEW.`tag` IS NULL THEN json_object('id', NEW.`id`, 'name', NEW.`name`)
			ELSE json_object('id', NEW.`id`, 'name', NEW.`name`, 'tag', NEW.`tag`) END,
		CAST(unixepoch('subsec') * 1000 AS INTEGER), CAST(unixepoch('subsec') * 1000 AS INTEGER)
	FROM `webhooks` WHERE `webhooks`.`owner_id` = NEW.`owner_id` AND `webhooks`.`disabled_at` IS NULL;
END;
