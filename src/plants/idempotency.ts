import type { KeptAnswer, KeyedCreate } from "../core/idempotency";
import type { NewPlant } from "../core/plant";
import type { PlantStore } from "../core/stores";
import { errorJson, HttpError, JSON_CONTENT_TYPE } from "../http/errors";
import { routeError } from "../http/models";
import { plantJson } from "./fields";
import { plantETag, presentValues, VALUE_FIELDS } from "./model";

/** 1 to 255 visible ASCII characters (SPEC, "Retrying a create safely"). */
const KEY = /^[\x21-\x7e]{1,255}$/;
const HOUR_MS = 3_600_000;

export const TAKEN_MESSAGE = "id: you already have a plant with this id; delete it first to replace it";

/** The Idempotency-Key sent, if any; 400 when it is not one. */
export function idempotencyKeyOf(request: Request): string | undefined {
  const key = request.headers.get("idempotency-key");
  if (key === null) return undefined;
  if (!KEY.test(key)) throw new HttpError(400, "Idempotency-Key: must be 1 to 255 visible ASCII characters");
  return key;
}

/** Of the plant's fields, so other spacing or key order is the same request. */
const requestHash = (plant: NewPlant) =>
  Bun.SHA256.hash(JSON.stringify(["POST", "/plants", String(plant.id), ...presentValues(plant)]), "hex");

function answerResponse({ status, body, etag }: KeptAnswer, replayed: boolean): Response {
  const headers: Record<string, string> = { "content-type": JSON_CONTENT_TYPE };
  if (etag !== undefined) headers.etag = etag;
  if (replayed) headers["idempotent-replayed"] = "true";
  return new Response(body, { status, headers });
}

/**
 * The answer is built before the write (the plant as sent is the plant as stored), kept with it, and
 * replayed byte for byte. A key still in flight here gets 409 at once; on another instance, the store says.
 */
export function keyedCreates(plants: PlantStore, ttlHours: number, clock: () => number) {
  const inFlight = new Set<string>();
  return async (ownerId: number, plant: NewPlant, key: string, onCreated: () => void): Promise<Response> => {
    const slot = `${ownerId}:${key}`;
    if (inFlight.has(slot)) throw inProgress();
    inFlight.add(slot);
    try {
      const at = clock();
      const keyed: KeyedCreate = {
        key,
        requestHash: requestHash(plant),
        at,
        expiredAt: at - ttlHours * HOUR_MS,
        created: { status: 200, body: plantJson(VALUE_FIELDS, undefined, plant), etag: plantETag(plant.id, plant) },
        taken: { status: 409, body: errorJson(409, TAKEN_MESSAGE) },
      };
      const outcome = await plants.createPlantOnce(ownerId, plant, keyed);
      if (outcome.kind === "busy") throw inProgress();
      if (outcome.kind === "fresh") {
        if (outcome.answer.status === 200) onCreated();
        return answerResponse(outcome.answer, false);
      }
      if (outcome.requestHash !== keyed.requestHash)
        throw new HttpError(
          422,
          "Idempotency-Key: already used for another request (another body); use a new key for a new request",
        );
      return answerResponse(outcome.answer, true);
    } finally {
      inFlight.delete(slot);
    }
  };
}

const inProgress = () =>
  new HttpError(409, "Idempotency-Key: a request with this key is still being processed; retry after Retry-After", {
    "retry-after": "1",
  });

const REPLAYED = {
  "Idempotent-Replayed": {
    description: "`true` when this is the kept answer to an earlier request with the same Idempotency-Key",
    schema: { type: "string" as const, enum: ["true"] },
  },
};

/** What OpenAPI says of keys on POST /plants (the generator's `x-parameters`, src/docs/openapi.ts). */
export const IDEMPOTENCY_DOC = {
  parameter: {
    name: "Idempotency-Key",
    in: "header",
    required: false,
    description:
      "Makes the create safe to retry: 1 to 255 visible ASCII characters, new for each new create (e.g. a UUID). " +
      "A retry with the same key and body within IDEMPOTENCY_TTL_HOURS (24 by default) gets the first answer again, " +
      "with `Idempotent-Replayed: true`, and changes nothing",
    schema: { type: "string" as const, minLength: 1, maxLength: 255 },
    example: "4f1c1a9e-2a6b-4f59-9a43-0c5e2d3b7a10",
  },
  replayedHeader: REPLAYED,
  responses: {
    409: {
      ...routeError(
        409,
        "You already have a plant with this id; nothing was changed (delete it first to replace it). " +
          "Or a request with this Idempotency-Key is still being processed: retry after Retry-After",
      ),
      headers: {
        ...REPLAYED,
        "Retry-After": {
          description: "Whole seconds to wait before retrying, when the key's first request is still being processed",
          schema: { type: "integer" as const },
        },
      },
    },
    422: routeError(422, "This Idempotency-Key was already used with another request body; nothing was changed"),
  },
};
