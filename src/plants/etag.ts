import { createHash } from "node:crypto";
import type { Plant } from "../core/plant";

/**
 * A plant's strong ETag, derived from its content alone (id, name, tag as canonical JSON), so
 * every instance and either engine gives the same tag for the same stored plant, and any change
 * gives another. The id is written in decimal so that ids past 2^53 stay exact.
 */
export function plantETag(id: bigint | number, plant: Plant): string {
  const canonical = JSON.stringify([String(id), plant.name, plant.tag ?? null]);
  return `"${createHash("sha256").update(canonical).digest("base64url").slice(0, 27)}"`;
}
