import type { Plant } from "../core/plant";
import { presentValues } from "./model";

/** From the plant's content alone, so every instance and engine gives the same tag for the same plant. */
export function plantETag(id: bigint | number, plant: Plant): string {
  const canonical = JSON.stringify([String(id), ...presentValues(plant)]);
  return `"${Bun.SHA256.hash(canonical, "base64url").slice(0, 27)}"`;
}
