import type { PlantFilter } from "../core/stores";

/**
 * A list statement has four shapes, with or without a cursor and with or without a tag; each
 * engine writes one statement per shape, in this order.
 */
export const LIST_SHAPES = [false, true].flatMap((after) => [false, true].map((tag) => ({ after, tag })));

/** Where a filter's shape sits in LIST_SHAPES (and in an engine's statements per shape). */
export const shapeOf = ({ after, tag }: PlantFilter) => (after === undefined ? 0 : 2) + (tag === undefined ? 0 : 1);

/** The order a shape's statement binds its parameters in: owner, tag, cursor, row count. */
export const listParamNames = ({ after, tag }: { after: boolean; tag: boolean }) => [
  "ownerId",
  ...(tag ? ["tag"] : []),
  ...(after ? ["after"] : []),
  "limit",
];
