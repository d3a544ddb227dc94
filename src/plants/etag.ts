import type { Plant } from "../core/plant";
import { presentValues } from "./model";

/** From the plant's content alone, so every instance and engine gives the same tag for the same plant. */
export const plantETag = (id: bigint | number, plant: Plant) =>
  `"${Bun.SHA256.hash(JSON.stringify([String(id), ...presentValues(plant)]), "base64url").slice(0, 27)}"`;
