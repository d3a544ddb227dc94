CREATE TABLE `webhook_events` (
	`seq` integer PRIMARY KEY NOT NULL,
	`owner_id` integer NOT NULL,
	`last_webhook_id` integer NOT NULL,
	`payload` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhook_events_owner_seq_idx` ON `webhook_events` (`owner_id`,`seq`);--> statement-breakpoint
-- The outbox in two steps (docs/decisions/0009-outbox-events.md). A created plant's INSERT now
-- writes one event (not one delivery per endpoint), and only when its owner has an enabled
-- endpoint; it records the owner's newest enabled endpoint, so one registered later is left out.
-- Deliveries already pending stay as they are.
DROP TRIGGER `plants_webhook_deliveries`;
--> statement-breakpoint
CREATE TRIGGER `plants_webhook_events` AFTER INSERT ON `plants`
BEGIN
	INSERT INTO `webhook_events` (`owner_id`, `last_webhook_id`, `payload`, `created_at`)
	SELECT NEW.`owner_id`, `last`,
		CASE WHEN NEW.`tag` IS NULL THEN json_object('id', NEW.`id`, 'name', NEW.`name`)
			ELSE json_object('id', NEW.`id`, 'name', NEW.`name`, 'tag', NEW.`tag`) END,
		CAST(unixepoch('subsec') * 1000 AS INTEGER)
	FROM (SELECT max(`id`) AS `last` FROM `webhooks` WHERE `owner_id` = NEW.`owner_id` AND `disabled_at` IS NULL)
	WHERE `last` IS NOT NULL;
END;
--> statement-breakpoint
-- Fanning an event out is deleting it (the dispatcher's claim, in batches): this inserts one
-- delivery per endpoint of its owner that was enabled when the plant was created and still is
-- (an id up to `last_webhook_id`), so the fan-out stays one statement through group commit, and
-- an event is fanned out exactly once. The id is as before: `msg_`, 12 hex digits of the
-- creation time in ms, 20 random hex digits.
CREATE TRIGGER `webhook_events_fan_out` AFTER DELETE ON `webhook_events`
BEGIN
	INSERT INTO `webhook_deliveries` (`id`, `webhook_id`, `payload`, `created_at`, `next_attempt_at`)
	SELECT 'msg_' || printf('%012x', OLD.`created_at`) || lower(hex(randomblob(10))),
		`id`, OLD.`payload`, OLD.`created_at`, OLD.`created_at`
	FROM `webhooks`
	WHERE `owner_id` = OLD.`owner_id` AND `id` <= OLD.`last_webhook_id` AND `disabled_at` IS NULL
	ORDER BY `id`;
END;
--> statement-breakpoint
-- An owner's last endpoint deleted: its waiting events would give no delivery (an endpoint
-- registered later has a larger id than any of them), so they go with it.
CREATE TRIGGER `webhooks_drop_events` AFTER DELETE ON `webhooks`
BEGIN
	DELETE FROM `webhook_events` WHERE `owner_id` = OLD.`owner_id`
		AND NOT EXISTS (SELECT 1 FROM `webhooks` WHERE `owner_id` = OLD.`owner_id`);
END;
