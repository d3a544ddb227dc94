import { modelResponse } from "../http/models";

// The plant routes' OpenAPI `detail` (`x-` keys are moved into place by src/docs/paths.ts).
export const ETAG_HEADER = {
  ETag: {
    description: "The plant's strong entity tag: send it in If-Match to change the plant only if nobody else has",
    schema: { type: "string" as const },
  },
};
export const headerParameter = (name: string, description: string) => ({
  name,
  in: "header",
  required: false,
  description,
  schema: { type: "string" as const },
});
export const IF_MATCH = headerParameter(
  "If-Match",
  'Change the plant only if its ETag is one of these (strong comparison), or `*` for any: else 412 and nothing changes. Example: `"…"` as read from ETag',
);
// What 400, 404 and 412 mean on the one-plant routes.
export const BAD_ID = "The path's id is not a signed 64-bit integer in decimal";
export const BAD_ID_OR_BODY = `${BAD_ID}, or the body breaks a rule (the message names the field)`;
export const NO_SUCH_PLANT = "You have no plant with this id (another user's plants are not yours to see)";
export const CHANGED =
  "If-Match: the plant has changed since you read its ETag (or a weak tag was sent); nothing was changed";
export const plantAnswer = (description: string) => ({ ...modelResponse(description, "Plant"), headers: ETAG_HEADER });
