import { HttpError } from "./errors";

/** One entity tag of a list (RFC 9110 §8.8.3): an opaque quoted string, `W/` before it when weak. */
const ENTITY_TAG = /^(W\/)?("[\x21\x23-\x7e\x80-\xff]*")$/;

export const isAnyTag = (header: string) => header.trim() === "*";

/** Whether `*` or a listed tag is `etag`; a malformed member matches nothing, a weak one only when not `strong`. */
const listed = (header: string, etag: string, strong: boolean) =>
  isAnyTag(header) ||
  header.split(",").some((member) => {
    const match = ENTITY_TAG.exec(member.trim());
    return match?.[2] === etag && !(strong && match[1] !== undefined);
  });

/** If-Match's strong comparison: a weak tag never matches. */
export const ifMatchHolds = (header: string, etag: string) => listed(header, etag, true);

/** If-None-Match's weak comparison: true when the client already has this representation. */
export const ifNoneMatchMatches = (header: string, etag: string) => listed(header, etag, false);

export const preconditionFailed = () =>
  new HttpError(
    412,
    "If-Match: the plant has changed since you read it (no listed ETag is its current one); read it again and retry with its ETag.",
  );
