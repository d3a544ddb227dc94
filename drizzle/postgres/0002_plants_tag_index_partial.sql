-- The tag index without the untagged plants: whole, it also covers an untagged list, which a
-- generic plan sized for the average owner read in full and sorted for a large owner's pages.
DROP INDEX "plants_owner_tag_id_name_idx";--> statement-breakpoint
CREATE INDEX "plants_owner_tag_id_name_idx" ON "plants" USING btree ("owner_id","tag","id","name") WHERE "plants"."tag" IS NOT NULL;