/**
 * Generators and oracles for tests/hostile.test.ts: hostile request bodies, query strings,
 * paths and headers, and what the SPEC allows the service to answer to each of them.
 * The oracles are written from SPEC.md, not from src/.
 */
import fc from "fast-check";

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;
export const INT32_MAX = 2_147_483_647;
export const BODY_LIMIT = 64 * 1024;

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

export const utf8Bytes = (text: string) => new TextEncoder().encode(text);

/** Code points, as the SPEC counts "characters". */
export const characters = (value: string) => [...value].length;

/** Well-formed and without U+0000 (which PostgreSQL's text cannot hold): what both engines store. */
const storable = (value: string) => value.isWellFormed() && !value.includes("\0");

export const validName = (value: unknown): value is string =>
  typeof value === "string" && storable(value) && characters(value) >= 1 && characters(value) <= 256;

export const validTag = (value: unknown): value is string =>
  typeof value === "string" && storable(value) && characters(value) <= 256;

/** Whether `new Headers()` takes this pair: a refusal there is the runtime's, not a server bug. */
export function headerAccepted(name: string, value: string): boolean {
  try {
    new Headers([[name, value]]);
    return true;
  } catch {
    return false;
  }
}

const latin1Char = fc.integer({ min: 0, max: 255 }).map((code) => String.fromCharCode(code));
export const latin1String = (maxLength: number) => fc.string({ unit: latin1Char, maxLength });

/** A header value `new Headers()` accepts: any byte but NUL, CR and LF. */
export const headerValue = (maxLength = 40) =>
  fc.oneof(
    latin1String(maxLength),
    fc.string({ unit: "binary-ascii", maxLength }),
    fc.constantFrom(
      "",
      " ",
      "\t",
      "-1",
      "0",
      "1, 2",
      "99999999999999999999",
      "%00",
      "\x7f",
      "\xff\xfe",
      "a".repeat(9000),
    ),
  );

// ---------------------------------------------------------------------------------------------
// POST /plants bodies
// ---------------------------------------------------------------------------------------------

/** How an `id` number literal must be treated: plain integers are exact; "7.0"-like may go either way. */
export type IdVerdict = { kind: "bad" } | { kind: "ok" | "either"; value: bigint };

/** Classifies the source text of a JSON value given for `id` (strings, fractions, out of range: bad). */
export function classifyIdText(source: string): IdVerdict {
  const match = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(source.trim());
  if (!match) return { kind: "bad" };
  const [, sign = "", whole = "", fraction, exponentText] = match;
  const plain = fraction === undefined && exponentText === undefined;
  if (plain && whole.length > 1 && whole.startsWith("0")) return { kind: "bad" }; // not JSON at all
  let digits = (whole + (fraction ?? "")).replace(/^0+/, "");
  let exponent = Number(exponentText ?? "0") - (fraction ?? "").length;
  if (digits === "") return { kind: plain ? "ok" : "either", value: 0n };
  const zeros = /0*$/.exec(digits)?.[0].length ?? 0;
  digits = digits.slice(0, digits.length - zeros);
  exponent += zeros;
  if (exponent < 0) return { kind: "bad" }; // a fraction
  if (digits.length + exponent > 19) return { kind: "bad" }; // at least 10^19 > int64
  const magnitude = BigInt(digits) * 10n ** BigInt(exponent);
  const value = sign === "-" ? -magnitude : magnitude;
  if (value < INT64_MIN || value > INT64_MAX) return { kind: "bad" };
  return { kind: plain ? "ok" : "either", value };
}

const hostileString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 12 }), weight: 30 },
  {
    arbitrary: fc.constantFrom(
      "",
      "a",
      "Fern",
      "\u0000",
      "a\u0000b",
      "\ud800",
      "a\udc00b",
      "\udfff\ud800",
      "🌵",
      "__proto__",
      "constructor",
      "prototype",
      "\u202e\u0000\uffff",
      "\r\n",
      "'; DROP TABLE plants; --",
      "%00",
    ),
    weight: 5,
  },
  { arbitrary: fc.string({ unit: "binary", maxLength: 40 }), weight: 10 },
  { arbitrary: fc.string({ unit: "grapheme", maxLength: 20 }), weight: 10 },
  {
    arbitrary: fc.string({
      unit: fc.constantFrom("\ud800", "\udbff", "\udc00", "\udfff", "a", "\u0000"),
      maxLength: 6,
    }),
    weight: 5,
  },
  { arbitrary: fc.integer({ min: 254, max: 258 }).map((n) => "x".repeat(n)), weight: 5 },
  { arbitrary: fc.integer({ min: 254, max: 258 }).map((n) => "🌵".repeat(n)), weight: 5 },
  { arbitrary: fc.integer({ min: 127, max: 129 }).map((n) => "é🌵".repeat(n)), weight: 5 },
  { arbitrary: fc.constant("y".repeat(100_000)), weight: 1 },
);

/** JSON text of a string that may break the rules (raw JSON.stringify escapes lone surrogates). */
const stringText = hostileString.map((value) => JSON.stringify(value));

const nonStringText = fc.oneof(
  fc.constantFrom("null", "true", "false", "0", "1", "-1", "1e400", "[]", "{}", '["a"]', '{"a":1}', '{"name":"x"}'),
  fc.jsonValue({ maxDepth: 2 }).map((value) => JSON.stringify(value)),
);

const deepText = fc
  .record({
    depth: fc.integer({ min: 500, max: 12_000 }),
    kind: fc.constantFrom("array", "object", "mixed"),
  })
  .map(({ depth, kind }) => {
    if (kind === "array") return "[".repeat(depth) + "]".repeat(depth);
    if (kind === "object") return `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
    return `${'[{"a":'.repeat(depth / 2)}0${"}]".repeat(depth / 2)}`;
  });

/** The pool of ids the seeded user owns, as JSON text, to hit 409 often. */
export const SEEDED_ALICE_IDS = ["1", "2", "-5", "9007199254740993", "9223372036854775807", "-9223372036854775808"];

const idText: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...SEEDED_ALICE_IDS), weight: 4 },
  { arbitrary: fc.bigInt({ min: INT64_MIN - 10n, max: INT64_MAX + 10n }).map(String), weight: 6 },
  { arbitrary: fc.bigInt({ min: -1000n, max: 1000n }).map(String), weight: 4 },
  {
    arbitrary: fc
      .tuple(fc.bigInt({ min: -1000n, max: 1000n }), fc.constantFrom(".0", "e0", "0e-1", ".5", "e2", "E+1", "e-1"))
      .map(([n, suffix]) => `${n}${suffix}`),
    weight: 4,
  },
  {
    arbitrary: fc.constantFrom(
      "1e400",
      "-1e400",
      "1e-400",
      "123456789012345678901234567890",
      "9223372036854775808",
      "-9223372036854775809",
      "18446744073709551616",
      "-0",
      "0.0",
      "0e99999999999",
      "1e99999999999",
      "1e-99999999999",
      "1e18",
      "1e19",
      "5e-324",
      "1.7976931348623157e308",
      "9223372036854775807.0",
      "92233720368547758070e-1",
      '"7"',
      '"1"',
      '"9223372036854775807"',
      "07",
      "+1",
      ".5",
      "0x10",
      "NaN",
      "Infinity",
    ),
    weight: 6,
  },
  { arbitrary: fc.integer({ min: 20, max: 70_000 }).map((n) => "9".repeat(n)), weight: 1 },
  { arbitrary: fc.integer({ min: 20, max: 500 }).map((n) => `1${"0".repeat(n)}`), weight: 1 },
  { arbitrary: nonStringText, weight: 2 },
);

export interface Field {
  /** The raw JSON text of the key, e.g. `"id"` or `"\u0069d"`. */
  keyText: string;
  valueText: string;
  /** True when the value nests thousands deep: a clean 400 is then allowed whatever else holds. */
  deep: boolean;
}

const plainKey = (name: string) => JSON.stringify(name);

const keyText: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom("id", "name", "tag").map(plainKey), weight: 6 },
  {
    arbitrary: fc.constantFrom(
      '"__proto__"',
      '"constructor"',
      '"prototype"',
      '"hasOwnProperty"',
      '"toString"',
      '"valueOf"',
      '"\\u005f_proto__"',
      '"\\u0069d"',
      '"n\\u0061me"',
      '"ID"',
      '"id "',
      '"id\\u0000"',
      '""',
      '"0"',
      '"length"',
    ),
    weight: 3,
  },
  { arbitrary: fc.string({ maxLength: 8 }).map(plainKey), weight: 1 },
);

const fieldArb: fc.Arbitrary<Field> = keyText.chain((key) => {
  const name = JSON.parse(key) as string;
  const values: fc.Arbitrary<string>[] =
    name === "id"
      ? [idText, idText, stringText]
      : name === "name" || name === "tag"
        ? [stringText, stringText, stringText, nonStringText]
        : [
            nonStringText,
            stringText,
            fc.constantFrom('{"id":77,"name":"proto"}', '{"tag":5}', '{"__proto__":{"id":1}}', "null", "[]"),
          ];
  return fc.oneof(
    { arbitrary: fc.oneof(...values).map((valueText) => ({ keyText: key, valueText, deep: false })), weight: 24 },
    { arbitrary: deepText.map((valueText) => ({ keyText: key, valueText, deep: true })), weight: 1 },
  );
});

const jsonWhitespace = fc.constantFrom("", "", "", " ", "\n", "\t", "\r\n  ");

export interface PlantBody {
  text: string;
  fields: Field[];
}

/** A plant-shaped object written as raw JSON text: duplicate keys, `__proto__` keys and all. */
export const plantBody: fc.Arbitrary<PlantBody> = fc
  .record({
    required: fc.tuple(idText, stringText),
    tag: fc.option(stringText, { nil: undefined }),
    extra: fc.array(fieldArb, { maxLength: 5 }),
    ws: jsonWhitespace,
    shuffleSeed: fc.nat(),
    dropRequired: fc.constantFrom(false, false, false, true),
  })
  .map(({ required, tag, extra, ws, shuffleSeed, dropRequired }) => {
    const fields: Field[] = [
      { keyText: plainKey("id"), valueText: required[0], deep: false },
      { keyText: plainKey("name"), valueText: required[1], deep: false },
    ];
    if (tag !== undefined) fields.push({ keyText: plainKey("tag"), valueText: tag, deep: false });
    if (dropRequired) fields.splice(shuffleSeed % fields.length, 1);
    // Extra fields go at spread positions, so duplicates land before and after the originals.
    extra.forEach((field, i) => {
      fields.splice((shuffleSeed + i * 7) % (fields.length + 1), 0, field);
    });
    const text = `{${ws}${fields.map((f) => `${f.keyText}${ws}:${ws}${f.valueText}`).join(`,${ws}`)}${ws}}`;
    return { text, fields };
  });

export interface StoredPlant {
  id: bigint;
  name: string;
  tag: string | undefined;
}

export type CreateOutcome = { status: 200; plant: StoredPlant } | { status: 400 | 409 | 413; plant?: undefined };

/**
 * Every outcome the SPEC allows for a POST of `body` by a user who owns `owned` ids. Where a
 * key appears twice, any occurrence may be the one that counts; "7.0"-like ids may go either way.
 */
export function allowedCreateOutcomes(body: PlantBody, owned: ReadonlySet<string>): CreateOutcome[] {
  if (utf8Bytes(body.text).byteLength > BODY_LIMIT) return [{ status: 413 }];
  const outcomes: CreateOutcome[] = [];
  // A body nested thousands deep may be refused as a whole.
  if (body.fields.some((f) => f.deep)) outcomes.push({ status: 400 });
  const occurrences = (key: string) => body.fields.filter((f) => JSON.parse(f.keyText) === key);
  const choices = (key: string) => {
    const found = occurrences(key);
    return found.length === 0 ? [undefined] : found;
  };
  for (const idField of choices("id")) {
    for (const nameField of choices("name")) {
      for (const tagField of choices("tag")) {
        const id = idField === undefined || idField.deep ? { kind: "bad" as const } : classifyIdText(idField.valueText);
        const name = nameField && !nameField.deep ? (JSON.parse(nameField.valueText) as unknown) : undefined;
        const tag = tagField && !tagField.deep ? (JSON.parse(tagField.valueText) as unknown) : undefined;
        const tagOk = tagField === undefined || validTag(tag);
        if (id.kind === "bad" || !validName(name) || !tagOk) {
          outcomes.push({ status: 400 });
          continue;
        }
        if (id.kind === "either") outcomes.push({ status: 400 });
        if (owned.has(String(id.value))) outcomes.push({ status: 409 });
        else outcomes.push({ status: 200, plant: { id: id.value, name, tag: tag as string | undefined } });
      }
    }
  }
  return outcomes;
}

/**
 * For any JSON text (no duplicate keys): the plant a 200 may have stored, or undefined when
 * no 200 is allowed. `either` marks "7.0"-like ids, which may also be refused.
 */
export function plantFromJsonText(text: string): { plant: StoredPlant; either: boolean } | undefined {
  const sources = new WeakMap<object, string>();
  let root: unknown;
  try {
    root = JSON.parse(text, function (this: object, key, value, context?: { source?: string }) {
      if (key === "id" && context?.source !== undefined) sources.set(this, context.source);
      return value;
    });
  } catch {
    return undefined;
  }
  if (typeof root !== "object" || root === null || Array.isArray(root)) return undefined;
  const record = root as Record<string, unknown>;
  if (!Object.hasOwn(record, "id") || !Object.hasOwn(record, "name")) return undefined;
  const source = sources.get(record);
  if (source === undefined) return undefined;
  const id = classifyIdText(source);
  if (id.kind === "bad" || !validName(record.name)) return undefined;
  if (Object.hasOwn(record, "tag") && !validTag(record.tag)) return undefined;
  return {
    plant: { id: id.value, name: record.name, tag: record.tag as string | undefined },
    either: id.kind === "either",
  };
}

/** Raw bytes for a body: random bytes, invalid UTF-8, or valid JSON with bytes spliced in. */
export const hostileBytes: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.uint8Array({ maxLength: 400 }),
  fc
    .constantFrom(
      [0xff],
      [0xc0, 0xaf],
      [0xed, 0xa0, 0x80], // an encoded lone surrogate
      [0xf4, 0x90, 0x80, 0x80], // past U+10FFFF
      [0xe2, 0x82],
      [0xef, 0xbb, 0xbf], // a lone BOM
      [0x00],
    )
    .map((bytes) => new Uint8Array(bytes)),
  fc
    .tuple(
      fc.constantFrom('{"id":4242,"name":"', '{"id":4242,"name":"a","tag":"', '{"id":4242,"name":"a"}', "["),
      fc.uint8Array({ minLength: 1, maxLength: 16 }),
      fc.constantFrom('"}', '"', "", "]"),
    )
    .map(([head, middle, tail]) => new Uint8Array([...utf8Bytes(head), ...middle, ...utf8Bytes(tail)])),
);

/** Any JSON value, serialised: arrays, numbers, strings, objects with odd keys. */
export const hostileJsonText: fc.Arbitrary<string> = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)),
  fc.anything({ maxDepth: 3 }).map((value) => JSON.stringify(value) ?? "undefined"),
  fc
    .dictionary(
      fc.constantFrom("id", "name", "tag", "__proto__", "constructor", "prototype", "x"),
      fc.jsonValue({ maxDepth: 2 }),
    )
    .map((value) => JSON.stringify(value)),
);

/** Texts that are not quite JSON. */
export const almostJsonText: fc.Arbitrary<string> = fc.constantFrom(
  "",
  " ",
  "{",
  "}",
  "{}",
  "[]",
  "null",
  '"{\\"id\\":1,\\"name\\":\\"a\\"}"',
  '{"id":4243,"name":"a",}',
  "{'id':4243,'name':'a'}",
  '{"id":4243,"name":"a"}garbage',
  '{"id":4243,"name":"a"}{"id":4244,"name":"b"}',
  '{"id":4243 "name":"a"}',
  '{"id":4243,"name":"a"\u0000}',
  '\u00a0{"id":4243,"name":"a"}',
  '\ufeff{"id":4243,"name":"a"}',
  '{"id":NaN,"name":"a"}',
  '{"id":Infinity,"name":"a"}',
  '{"id":0x10,"name":"a"}',
  '{"id":4243,"name":"a\nb"}',
  '{"id":4243,"name":"\\x41"}',
  '{"id":4243,"name":"\\u12"}',
  '{"id":4243,"name":"a"/*c*/}',
  `{"id":4243,"name":"a","x":${"[".repeat(10_000)}}`,
  `${"[".repeat(10_000)}${"]".repeat(10_000)}`,
  `${'{"a":'.repeat(10_000)}1${"}".repeat(10_000)}`,
);

// ---------------------------------------------------------------------------------------------
// Content types
// ---------------------------------------------------------------------------------------------

export const contentType: fc.Arbitrary<string | undefined> = fc
  .oneof(
    {
      arbitrary: fc.constantFrom(
        "application/json",
        "application/json; charset=utf-8",
        "Application/Json",
        "application/json; charset=latin1",
        "application/problem+json",
      ),
      weight: 3,
    },
    fc.constant(undefined),
    fc.constantFrom(
      "application/json",
      "APPLICATION/JSON",
      "application/json; charset=utf-8",
      "application/json;charset=UTF-8",
      "application/json; charset=latin1",
      "application/json;;;",
      "application/merge-patch+json",
      "application/vnd.api+json",
      "application/+json",
      "application/jsonx",
      "application/json, text/plain",
      "json",
      "text/json",
      "text/plain",
      "text/plain;charset=UTF-8",
      "text/html",
      "application/x-www-form-urlencoded",
      "multipart/form-data",
      "multipart/form-data; boundary=xyz",
      "application/octet-stream",
      "application/xml",
      "*/*",
      "",
      " ",
      ";",
      "application/",
      "/json",
      "application/json\u00ff",
    ),
    headerValue(30),
  )
  .filter((value) => value === undefined || headerAccepted("content-type", value));

/** The media type a server should see, lower-cased; "" when absent. */
export const mediaTypeOf = (value: string | undefined) => (value ?? "").split(";")[0]?.trim().toLowerCase() ?? "";

// ---------------------------------------------------------------------------------------------
// Query strings
// ---------------------------------------------------------------------------------------------

const percentGarbage = fc.constantFrom(
  "%",
  "%z",
  "%zz",
  "%00",
  "%2",
  "%%",
  "%C0%AF",
  "%E2%82",
  "%FF",
  "%2B",
  "+",
  "%26",
  "%3D",
  "%23",
  "%0A",
  "%20",
  "%31",
  "%u0031",
);

/** A raw query component (already in URL form): never a literal "&" or "#". */
const rawComponent: fc.Arbitrary<string> = fc
  .oneof(
    fc.string({ unit: "binary", maxLength: 8 }),
    fc
      .array(fc.oneof(percentGarbage, fc.string({ unit: "binary-ascii", maxLength: 3 })), { maxLength: 4 })
      .map((parts) => parts.join("")),
    fc.string({ unit: "binary", maxLength: 8 }).map(encodeURIComponent),
  )
  .map((text) => text.replaceAll("&", "%26").replaceAll("#", "%23"));

const limitValue: fc.Arbitrary<string> = fc.oneof(
  fc.nat({ max: 8 }).map(String),
  fc.constantFrom(
    "0",
    "2147483647",
    "2147483648",
    "4294967296",
    "-1",
    "-0",
    "1.5",
    "1.0",
    "1e1",
    "0x1",
    "%201",
    "1%20",
    "+1",
    "01",
    "",
    "00000000000000000000001",
    "99999999999999999999999",
    "Infinity",
    "NaN",
    "null",
    "true",
    "[]",
    "1,2",
    "1=2",
    "%31",
    "%",
    "%zz",
    "%00",
    "1%00",
    "١",
  ),
  fc.bigInt({ min: -(2n ** 40n), max: 2n ** 40n }).map(String),
  rawComponent,
);

const queryKey: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constant("limit"), weight: 6 },
  {
    arbitrary: fc.constantFrom(
      "LIMIT",
      "%6Cimit",
      "%6cimit",
      "limit%00",
      "limit[]",
      "limit[0]",
      "limit.x",
      " limit",
      "__proto__",
      "constructor",
      "__proto__[limit]",
      "access_token",
      "token",
      "",
    ),
    weight: 3,
  },
  { arbitrary: rawComponent, weight: 2 },
);

export interface QueryParam {
  key: string;
  /** undefined: the key alone, with no "=". */
  value: string | undefined;
}

export const queryParams: fc.Arbitrary<QueryParam[]> = fc.array(
  fc.record({ key: queryKey, value: fc.option(limitValue, { nil: undefined, freq: 8 }) }),
  { maxLength: 4 },
);

export const queryString = (params: QueryParam[]) =>
  params.map(({ key, value }) => (value === undefined ? key : `${key}=${value}`)).join("&");

function decodings(raw: string): string[] {
  const found = new Set([raw]);
  for (const text of [raw, raw.replaceAll("+", " ")]) {
    try {
      found.add(decodeURIComponent(text));
    } catch {}
  }
  return [...found];
}

/**
 * Whether GET /plants must refuse the query for its names alone: a name it does not take (it
 * takes limit, after and tag), one given twice, or one that is not valid percent-encoding.
 */
export function queryNamesRefused(search: string): boolean {
  const names: string[] = [];
  for (const pair of search.split("&")) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    try {
      names.push(decodeURIComponent((eq < 0 ? pair : pair.slice(0, eq)).replaceAll("+", " ")));
    } catch {
      return true;
    }
  }
  return names.some((name) => !["limit", "after", "tag"].includes(name)) || new Set(names).size !== names.length;
}

/** 0–2147483647 in decimal; leading zeros ("01") are "either": accepted or refused. */
export const validLimit = (value: string) => /^(0|[1-9][0-9]*)$/.test(value) && Number(value) <= INT32_MAX;
export const paddedLimit = (value: string) => /^0[0-9]+$/.test(value) && Number(value) <= INT32_MAX;

/**
 * The `limit` values a server may read from a query string as the URL parser left it: a list
 * of the candidate readings of each `limit` parameter.
 */
export function limitReadings(search: string): string[][] {
  if (search === "") return [];
  return search
    .split("&")
    .map((pair) => {
      const eq = pair.indexOf("=");
      const key = eq < 0 ? pair : pair.slice(0, eq);
      const value = eq < 0 ? "" : pair.slice(eq + 1);
      return { keys: decodings(key), values: decodings(value) };
    })
    .filter(({ keys }) => keys.includes("limit"))
    .map(({ values }) => values);
}

// ---------------------------------------------------------------------------------------------
// Paths and methods
// ---------------------------------------------------------------------------------------------

const pathSegment: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constant("plants"), weight: 6 },
  { arbitrary: fc.constantFrom(...SEEDED_ALICE_IDS, "3", "42", "-0", "+1", "1e3", "1.0", "01", " 1"), weight: 4 },
  {
    arbitrary: fc.constantFrom(
      "",
      ".",
      "..",
      "%2e%2e",
      "%2F",
      "%2f",
      "%00",
      "%",
      "%zz",
      "%C0%AF",
      "%E2%82",
      "%FF",
      "%31",
      "%2D1",
      "swagger",
      "json",
      "PLANTS",
      "plants%2F1",
      "plants;1",
      "plants%00",
      "%20",
      "\\",
      "\\..\\",
      "🌵",
      "ünïcödé",
      "9223372036854775808",
      "-9223372036854775809",
      "99999999999999999999999999",
    ),
    weight: 4,
  },
  { arbitrary: fc.bigInt({ min: INT64_MIN - 5n, max: INT64_MAX + 5n }).map(String), weight: 1 },
  { arbitrary: fc.integer({ min: 1000, max: 20_000 }).map((n) => "1".repeat(n)), weight: 1 },
  { arbitrary: fc.integer({ min: 1000, max: 20_000 }).map((n) => "a".repeat(n)), weight: 1 },
  // A literal "#" would make the rest a fragment: covered by its own test.
  {
    arbitrary: fc
      .string({ unit: "binary", maxLength: 10 })
      .map((s) => s.replaceAll("#", "%23").replaceAll("?", "%3F").replaceAll("/", "%2F")),
    weight: 2,
  },
  { arbitrary: latin1String(10).map((s) => s.replaceAll("#", "%23").replaceAll("?", "%3F")), weight: 1 },
);

const plantsPath: fc.Arbitrary<string> = fc
  .record({
    segment: fc.option(fc.oneof(fc.constantFrom(...SEEDED_ALICE_IDS), pathSegment), { nil: undefined, freq: 4 }),
    trailingSlash: fc.constantFrom(false, false, false, true),
  })
  .map(
    ({ segment, trailingSlash }) => `/plants${segment === undefined ? "" : `/${segment}`}${trailingSlash ? "/" : ""}`,
  );

const anyPath: fc.Arbitrary<string> = fc
  .record({
    segments: fc.array(pathSegment, { minLength: 0, maxLength: 4 }),
    trailingSlash: fc.boolean(),
    query: fc.option(queryParams.map(queryString), { nil: undefined, freq: 4 }),
  })
  .map(({ segments, trailingSlash, query }) => {
    let path = `/${segments.join("/")}`;
    if (trailingSlash && !path.endsWith("/")) path += "/";
    if (query !== undefined) path += `?${query}`;
    return path;
  });

export const randomPath: fc.Arbitrary<string> = fc.oneof(plantsPath, anyPath);

const tokenChars = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

export const httpMethod: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom("GET", "POST", "DELETE"), weight: 6 },
  { arbitrary: fc.constantFrom("PUT", "PATCH", "OPTIONS", "HEAD", "QUERY", "PROPFIND", "M-SEARCH", "LINK"), weight: 3 },
  { arbitrary: fc.string({ unit: fc.constantFrom(...tokenChars), minLength: 1, maxLength: 8 }), weight: 1 },
);

// ---------------------------------------------------------------------------------------------
// Headers
// ---------------------------------------------------------------------------------------------

export interface AuthorizationParts {
  scheme: string;
  separator: string;
  token:
    | "real"
    | "real-upper"
    | "real-prefixed"
    | "real-suffixed"
    | "real-truncated"
    | "real-twice"
    | "empty"
    | "random"
    | "long";
  random: string;
  trailing: string;
}

export const authorizationParts: fc.Arbitrary<AuthorizationParts> = fc.record({
  scheme: fc.oneof(
    { arbitrary: fc.constantFrom("Bearer", "bearer", "BEARER", "bEaReR"), weight: 6 },
    {
      arbitrary: fc.constantFrom(
        "",
        "Basic",
        "Token",
        "Bearer:",
        "Bearerx",
        "Bear",
        "B\u00e9arer",
        "Bearer,",
        "Digest",
        "pst_",
      ),
      weight: 2,
    },
    { arbitrary: latin1String(8).map((text) => text.replace(/[\0\r\n]/g, "")), weight: 1 },
  ),
  separator: fc.constantFrom(" ", " ", " ", "  ", "\t", " \t ", "", ",", ":", "="),
  token: fc.constantFrom(
    "real",
    "real",
    "real-upper",
    "real-prefixed",
    "real-suffixed",
    "real-truncated",
    "real-twice",
    "empty",
    "random",
    "random",
    "long",
  ),
  random: fc
    .oneof(latin1String(60), fc.string({ unit: "binary-ascii", minLength: 1, maxLength: 60 }))
    .map((text) => text.replace(/[\0\r\n]/g, "")),
  trailing: fc.constantFrom("", "", " ", "\t", " x", ",", "\u00a0"),
});

/** The Authorization header text, the token it carries, and whether a 200 is required or forbidden. */
export function authorizationValue(parts: AuthorizationParts, realToken: string) {
  const token = {
    real: realToken,
    "real-upper": realToken.toUpperCase(),
    "real-prefixed": `x${realToken}`,
    "real-suffixed": `${realToken}x`,
    "real-truncated": realToken.slice(0, -1),
    "real-twice": `${realToken} ${realToken}`,
    empty: "",
    random: parts.random,
    long: `pst_${"A".repeat(70_000)}`,
  }[parts.token];
  const value = `${parts.scheme}${parts.separator}${token}${parts.trailing}`;
  const bearerScheme = /^bearer$/i.test(parts.scheme);
  const trailingIsSpace = /^[ \t]*$/.test(parts.trailing);
  // Trimming a trailing U+00A0 as well (JS trim) is lenient but still needs the real token.
  const trailingIsBlank = /^\s*$/.test(parts.trailing);
  /** RFC 6750: `Bearer 1*SP b64token`, scheme case-insensitive. */
  const mustSucceed = bearerScheme && /^ +$/.test(parts.separator) && parts.token === "real" && trailingIsSpace;
  /** 200 is allowed only if the header carries exactly the real token after a Bearer scheme. */
  const mayPass =
    bearerScheme &&
    /^[ \t]+$/.test(parts.separator) &&
    trailingIsBlank &&
    (parts.token === "real" ||
      (parts.token === "real-upper" && realToken === realToken.toUpperCase()) ||
      (parts.token === "random" && parts.random.trim() === realToken));
  return { value, token, mustSucceed, mayPass };
}

const extraHeaderName: fc.Arbitrary<string> = fc.oneof(
  {
    arbitrary: fc.constantFrom(
      "content-length",
      "transfer-encoding",
      "content-type",
      "content-encoding",
      "cookie",
      "host",
      "origin",
      "referer",
      "x-forwarded-for",
      "x-forwarded-host",
      "x-forwarded-proto",
      "x-real-ip",
      "forwarded",
      "expect",
      "accept",
      "accept-encoding",
      "accept-language",
      "range",
      "if-none-match",
      "if-modified-since",
      "connection",
      "upgrade",
      "te",
      "x-http-method-override",
      "x-method-override",
      "authorization",
      "access-control-request-method",
      "access-control-request-headers",
      "proxy-authorization",
      "__proto__",
      "constructor",
    ),
    weight: 4,
  },
  { arbitrary: fc.string({ unit: fc.constantFrom(...tokenChars), minLength: 1, maxLength: 20 }), weight: 2 },
  { arbitrary: fc.constant(`x-${"h".repeat(5000)}`), weight: 1 },
);

export const extraHeaders: fc.Arbitrary<Array<[string, string]>> = fc.array(
  fc
    .tuple(
      extraHeaderName,
      fc.oneof(
        headerValue(60),
        fc.constantFrom(
          "a=%zz; =; ;;",
          "__proto__=1; constructor=2",
          "gzip",
          "chunked",
          "100-continue",
          "bytes=0-1",
          "websocket",
          "DELETE",
          "Bearer pst_x",
          "null",
          "0",
          "100000",
          "-1",
          "1.5",
          "2147483648",
        ),
      ),
    )
    .filter(([name, value]) => headerAccepted(name, value)),
  { maxLength: 5 },
);

/** `text`, cut to `max` characters for a failure message. */
export const clip = (text: string, max = 200) =>
  text.length > max ? `${text.slice(0, max)}…(${text.length} chars)` : text;

/** A property's own failure: fast-check shrinks on it and prints the message. */
export class PropertyFailure extends Error {}
export function check(condition: unknown, message: () => string): asserts condition {
  if (!condition) throw new PropertyFailure(message());
}

/**
 * Runs per property: 100 in the fast loop (`bun test`), 300 under `bun run test` (which sets
 * HOSTILE_RUNS), HOSTILE_RUNS=5000 to dig deeper.
 */
export const HOSTILE_RUNS = Number(process.env.HOSTILE_RUNS) || 100;
