-- Webhooks fed by the change log (src/webhooks/fan-out.ts): the outbox's events, triggers and
-- table go. Events still waiting are fanned out first, as the dispatcher's claim did: deleting
-- them fires their trigger, which writes their deliveries.
DELETE FROM `webhook_events`;
--> statement-breakpoint
DROP TRIGGER `plants_webhook_events`;
--> statement-breakpoint
DROP TRIGGER `webhook_events_fan_out`;
--> statement-breakpoint
DROP TRIGGER `webhooks_drop_events`;
--> statement-breakpoint
DROP TABLE `webhook_events`;--> statement-breakpoint
ALTER TABLE `webhook_deliveries` ADD `type` text DEFAULT 'plant.created' NOT NULL;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `events` text;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `change_cursor` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
-- Every endpoint starts past the changes already in its owner's log: their plants' deliveries
-- were written by the events above.
UPDATE `webhooks` SET `change_cursor` = coalesce((SELECT max(`seq`) FROM `plant_changes` WHERE `owner_id` = `webhooks`.`owner_id`), 0);
