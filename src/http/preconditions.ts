import { HttpError } from "./errors";

/** One entity tag of a list (RFC 9110 §8.8.3): an opaque quoted string, `W/` before it when weak. */
const ENTITY_TAG = /^(W\/)?("[\x21\x23-\x7e\x80-\xff]*")$/;

/** A malformed member matches nothing. */
function listedTags(header: string): Array<{ weak: boolean; tag: string }> {
  const tags: Array<{ weak: boolean; tag: string }> = [];
  for (const member of header.split(",")) {
    const match = ENTITY_TAG.exec(member.trim());
    if (match) tags.push({ weak: match[1] !== undefined, tag: match[2] as string });
  }
  return tags;
}

export const isAnyTag = (header: string) => header.trim() === "*";

/** If-Match's strong comparison: a weak tag never matches. */
export const ifMatchHolds = (header: string, etag: string) =>
  isAnyTag(header) || listedTags(header).some(({ weak, tag }) => !weak && tag === etag);

/** If-None-Match's weak comparison: true when the client already has this representation. */
export const ifNoneMatchMatches = (header: string, etag: string) =>
  isAnyTag(header) || listedTags(header).some(({ tag }) => tag === etag);

export const preconditionFailed = () =>
  new HttpError(
    412,
    "If-Match: the plant has changed since you read it (no listed ETag is its current one); read it again and retry with its ETag.",
  );
