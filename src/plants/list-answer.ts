import { andThen, type PlantFilter, type PlantPage, type PlantStore } from "../core/stores";
import type { PageOf, PageReader } from "../http/pager";
import { type Fields, plantJson } from "./fields";

/** Relative, built from the query alone (never from the Host header). */
export function nextLink(limit: number, lastId: bigint, tag: string | undefined, fields?: Fields): string {
  const tagPart = tag === undefined ? "" : `&tag=${encodeURIComponent(tag)}`;
  const fieldsPart = fields === undefined ? "" : `&fields=${fields.join(",")}`;
  return `</plants?limit=${limit}&after=${lastId}${tagPart}${fieldsPart}>; rel="next"`;
}

export interface ListRequest {
  ownerId: number;
  filter: PlantFilter;
  /** All that match when undefined. */
  limit: number | undefined;
  fields?: Fields;
}

/** An owner's plants for the pager (src/http/pager.ts), keyed by id; a long page's end is found on the index alone. */
export function plantPages(
  plants: PlantStore,
  { ownerId, filter, limit, fields }: ListRequest,
): PageReader<bigint, PlantPage & PageOf<bigint>> {
  const withIds = fields?.includes("id") === true;
  return {
    chunkSize: plants.listChunkSize,
    read: (after, count, upTo) =>
      andThen(plants.listPage(ownerId, { ...filter, after }, count, upTo, withIds), (page) => ({
        ...page,
        count: page.plants.length,
        last: page.lastId,
      })),
    end: async (after, count) => {
      const end = await plants.nthId(ownerId, { ...filter, after }, count);
      return end && { cursor: end.id, more: end.more };
    },
    json: (page) =>
      fields === undefined
        ? JSON.stringify(page.plants)
        : `[${page.plants.map((plant, i) => plantJson(fields, page.ids?.[i], plant)).join(",")}]`,
    link: (last) => nextLink(limit ?? 0, last, filter.tag, fields),
  };
}
