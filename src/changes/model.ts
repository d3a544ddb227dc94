import { t } from "elysia";
import { CHANGE_TYPES, type Change } from "../core/changes";
import { HttpError } from "../http/errors";
import { DateTime, Int32Query, Int64, Int64Query, Integer, withOwnMessage } from "../http/types";
import { plantJson } from "../plants/fields";
import { PLANT_FIELDS, plantModels } from "../plants/model";

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

const changeLiterals = CHANGE_TYPES.map((type) => t.Literal(type));
/** One of the change types, as the change and the webhook models name them. */
export const changeType = (description: string) => t.Union(changeLiterals, { description });

export const changesQuery = t.Object({
  after: t.Optional(
    Int64Query({
      minimum: 0,
      description:
        "Only changes after this seq (the `Link` header, `Changes-Cursor` or the last change's seq gives it); from the oldest kept when absent",
    }),
  ),
  limit: t.Optional(
    Int32Query({ minimum: 0, maximum: MAX_LIMIT, description: `How many changes at most (default ${DEFAULT_LIMIT})` }),
  ),
});

export const changeModels = {
  Change: withOwnMessage(
    t.Object(
      {
        seq: Integer("Strictly increasing along your log; gaps are allowed", { minimum: 1 }),
        type: changeType("What happened to the plant"),
        timestamp: DateTime("When it was written, UTC with milliseconds"),
        data: t.Object(
          { id: Int64({ description: "The plant's id" }), ...plantModels.Plant.properties },
          { description: "The plant after the change (as it was, for plant.deleted)" },
        ),
      },
      { description: "One change to one of your plants" },
    ),
  ),
};

/** The change as the feed (and the webhooks) show it: the plant's fields as its model declares them, the id exact. */
export const changeJson = (change: Change) => {
  const data = plantJson(PLANT_FIELDS, change.id, change.plant);
  return `{"seq":${change.seq},"type":"${change.type}","timestamp":"${new Date(change.at).toISOString()}","data":${data}}`;
};

/** One Server-Sent Event: `id`, `event`, `data` and the blank line that ends it. */
export const changeEvent = (change: Change) =>
  `id: ${change.seq}\nevent: ${change.type}\ndata: ${changeJson(change)}\n\n`;

/** 410: the cursor is older than the oldest change kept. */
export function gone(newest: number): HttpError {
  return new HttpError(
    410,
    "The cursor (after, or Last-Event-ID) is older than the changes kept; list your plants again (GET /plants) and follow from the Changes-Cursor header of this answer.",
    { "changes-cursor": String(newest) },
  );
}
