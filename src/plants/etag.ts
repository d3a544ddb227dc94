import { createHash } from "node:crypto";
import type { Plant } from "../core/plant";

/** From the plant's content alone, so every instance and engine gives the same tag for the same plant. */
export function plantETag(id: bigint | number, plant: Plant): string {
  const canonical = JSON.stringify([String(id), plant.name, plant.tag ?? null]);
  return `"${createHash("sha256").update(canonical).digest("base64url").slice(0, 27)}"`;
}
