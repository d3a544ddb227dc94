/**
 * The core SPEC behaviours over HTTP, run against any Plant Store (the service or the baseline)
 * before it is benchmarked, so both are known to do the same work.
 *
 *   bun bench/checks.ts <baseUrl> <token> <otherToken>
 *
 * prints one line per failure and exits 1 if there is any. Plants are made with ids around
 * -4e18 (far from benchmark data) and deleted again.
 */

const INT64_MAX = "9223372036854775807";
const INT64_MAX_MINUS_1 = "9223372036854775806";
const BASE_ID = -4_000_000_000_000_000_000n;
const ids = (offset: number) => String(BASE_ID - BigInt(offset));

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

export async function runBehaviourChecks(baseUrl: string, token: string, otherToken: string): Promise<string[]> {
  const base = baseUrl.replace(/\/+$/, "");
  const failures: string[] = [];
  const created: Array<{ id: string; token: string }> = [];

  async function send(
    method: string,
    path: string,
    options: { token?: string | null; body?: string; headers?: Record<string, string> } = {},
  ): Promise<Answer> {
    const headers: Record<string, string> = { ...options.headers };
    const bearer = options.token === undefined ? token : options.token;
    if (bearer !== null) headers.authorization = `Bearer ${bearer}`;
    if (options.body !== undefined) headers["content-type"] ??= "application/json";
    const response = await fetch(`${base}${path}`, { method, headers, body: options.body });
    const text = await response.text();
    let json: unknown;
    try {
      json = text === "" ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: response.status, headers: response.headers, text, json };
  }

  function check(label: string, condition: boolean, detail: () => string): void {
    if (!condition) failures.push(`${label}: ${detail()}`);
  }

  /** Status, nosniff, and for an error the `{error, message}` JSON body. */
  function expect(label: string, answer: Answer, status: number): void {
    check(label, answer.status === status, () => `status ${answer.status}, expected ${status} (body ${answer.text})`);
    check(
      label,
      answer.headers.get("x-content-type-options") === "nosniff",
      () => "missing X-Content-Type-Options: nosniff",
    );
    if (status < 400) return;
    const body = answer.json as { error?: unknown; message?: unknown } | undefined;
    const shapeOk =
      typeof body === "object" &&
      body !== null &&
      !Array.isArray(body) &&
      body.error === status &&
      typeof body.message === "string" &&
      body.message.length > 0 &&
      Object.keys(body).length === 2;
    check(label, shapeOk, () => `error body is not {"error": ${status}, "message": "..."}: ${answer.text}`);
    check(
      label,
      (answer.headers.get("content-type") ?? "").toLowerCase().startsWith("application/json"),
      () => `error content-type is ${answer.headers.get("content-type")}`,
    );
  }

  function expectBody(label: string, answer: Answer, expected: unknown): void {
    check(
      label,
      JSON.stringify(answer.json) === JSON.stringify(expected),
      () => `body ${answer.text}, expected ${JSON.stringify(expected)}`,
    );
  }

  async function create(label: string, id: string, name: string, tag?: string, as = token): Promise<Answer> {
    const tagPart = tag === undefined ? "" : `,"tag":${JSON.stringify(tag)}`;
    const answer = await send("POST", "/plants", {
      token: as,
      body: `{"id":${id},"name":${JSON.stringify(name)}${tagPart}}`,
    });
    if (answer.status === 200) created.push({ id, token: as });
    expect(label, answer, 200);
    return answer;
  }

  const post = (body: string, headers?: Record<string, string>) => send("POST", "/plants", { body, headers });

  try {
    // Clean leftovers of an interrupted earlier run.
    for (let offset = 0; offset < 10; offset++) {
      await send("DELETE", `/plants/${ids(offset)}`);
      await send("DELETE", `/plants/${ids(offset)}`, { token: otherToken });
    }
    for (const id of [INT64_MAX, INT64_MAX_MINUS_1]) await send("DELETE", `/plants/${id}`);

    // --- Create
    let answer = await create("create with tag", ids(1), "Monstera", "tropical");
    expectBody("create with tag", answer, { name: "Monstera", tag: "tropical" });
    check(
      "create content-type",
      (answer.headers.get("content-type") ?? "").toLowerCase().startsWith("application/json"),
      () => `content-type ${answer.headers.get("content-type")}`,
    );
    answer = await create("create without tag", ids(2), "Fern");
    expectBody("create without tag", answer, { name: "Fern" });
    answer = await send("POST", "/plants", { body: `{"id":${ids(0)},"name":"Aloe","tag":"","colour":"green"}` });
    if (answer.status === 200) created.push({ id: ids(0), token });
    expect("create with empty tag and an unknown field", answer, 200);
    expectBody("create with empty tag and an unknown field", answer, { name: "Aloe", tag: "" });

    answer = await post(`{"id":${ids(1)},"name":"Other name"}`);
    expect("duplicate id", answer, 409);
    answer = await send("GET", "/plants");
    check(
      "duplicate leaves the plant unchanged",
      JSON.stringify(answer.json).includes('{"name":"Monstera","tag":"tropical"}') &&
        !JSON.stringify(answer.json).includes("Other name"),
      () => `list after the 409: ${answer.text.slice(0, 300)}`,
    );

    answer = await create("same id for another user", ids(1), "Cactus", undefined, otherToken);
    expectBody("same id for another user", answer, { name: "Cactus" });

    // --- int64 ids kept exact
    answer = await create("id 2^63-1", INT64_MAX, "Max");
    answer = await create("id 2^63-2 is another plant", INT64_MAX_MINUS_1, "Max minus one");
    answer = await post(`{"id":9223372036854775808,"name":"Too big"}`);
    expect("id 2^63 is out of range", answer, 400);
    answer = await post(`{"id":-9223372036854775809,"name":"Too small"}`);
    expect("id -2^63-1 is out of range", answer, 400);
    answer = await post(`{"id":"7","name":"String id"}`);
    expect('id as a string "7"', answer, 400);
    answer = await post(`{"id":1.5,"name":"Fraction"}`);
    expect("id 1.5", answer, 400);
    answer = await post(`{"id":${ids(9)}.5,"name":"Fraction"}`);
    expect("fractional id with an int64-sized whole part", answer, 400);
    answer = await post(`{"name":"No id"}`);
    expect("missing id", answer, 400);

    // --- name and tag
    answer = await post(`{"id":${ids(3)},"name":""}`);
    expect('name ""', answer, 400);
    answer = await post(`{"id":${ids(3)},"name":"${"a".repeat(257)}"}`);
    expect("name of 257 characters", answer, 400);
    answer = await post(`{"id":${ids(3)},"name":null}`);
    expect("name null", answer, 400);
    answer = await post(`{"id":${ids(3)},"name":"ok","tag":null}`);
    expect("tag null", answer, 400);
    answer = await post(`{"id":${ids(3)},"name":"ok","tag":"${"t".repeat(257)}"}`);
    expect("tag of 257 characters", answer, 400);
    answer = await post(`{"id":${ids(3)},"name":"\\ud800"}`);
    expect("name with a lone surrogate", answer, 400);
    answer = await create("name of 256 emoji (code points, not UTF-16 units)", ids(3), "🌵".repeat(256));
    expectBody("name of 256 emoji (code points, not UTF-16 units)", answer, { name: "🌵".repeat(256) });

    // --- body
    answer = await post(`{"id":${ids(4)},"name":"x"`);
    expect("malformed JSON", answer, 400);
    answer = await post(`[1,2]`);
    expect("JSON array body", answer, 400);
    answer = await send("POST", "/plants", { headers: { "content-type": "application/json" } });
    expect("no body", answer, 400);
    answer = await post(`{"id":${ids(4)},"name":"x"}`, { "content-type": "text/plain" });
    expect("text/plain body", answer, 415);
    answer = await send("POST", "/plants", {
      body: `{"id":${ids(4)},"name":"${"x".repeat(70_000)}"}`,
    });
    expect("declared body over 64 KiB", answer, 413);

    // --- list
    answer = await send("GET", "/plants");
    expect("list", answer, 200);
    const all = answer.json as Array<{ name?: string }>;
    check("list is an array", Array.isArray(all), () => answer.text.slice(0, 200));
    if (Array.isArray(all)) {
      const names = all.map((plant) => plant.name);
      // Ascending ids: ids(3) < ids(2) < ids(1) < ids(0) < ... < 2^63-2 < 2^63-1.
      const order = ["🌵".repeat(256), "Fern", "Monstera", "Aloe", "Max minus one", "Max"].map((name) =>
        names.indexOf(name),
      );
      check(
        "list is ordered by id",
        order.every((at, i) => at >= 0 && (i === 0 || at > (order[i - 1] ?? -1))),
        () => `positions ${order.join(", ")}`,
      );
      check("list holds only the caller's plants", !names.includes("Cactus"), () => "another user's plant is listed");
      check(
        "plants have no id and no null tag",
        all.every((plant) => !("id" in plant) && (plant as { tag?: unknown }).tag !== null),
        () => "a plant has an id or a null tag",
      );
    }
    const fern = all.findIndex?.((plant) => plant.name === "Fern") ?? -1;
    answer = await send("GET", `/plants?limit=${fern + 1}`);
    expect("list with limit", answer, 200);
    check(
      "list with limit",
      Array.isArray(answer.json) &&
        (answer.json as unknown[]).length === fern + 1 &&
        JSON.stringify((answer.json as unknown[]).at(-1)) === '{"name":"Fern"}',
      () => `limit=${fern + 1} gave ${answer.text.slice(0, 300)}`,
    );
    // SPEC (paging): more plants follow Fern, so the page names the next one, relative, after Fern's id.
    const expectedLink = `</plants?limit=${fern + 1}&after=${ids(2)}>; rel="next"`;
    check(
      "list with limit links the next page",
      answer.headers.get("link") === expectedLink,
      () => `Link is ${answer.headers.get("link")}, expected ${expectedLink}`,
    );
    answer = await send("GET", `/plants?limit=${all.length}`);
    check(
      "the last page has no Link",
      answer.status === 200 && answer.headers.get("link") === null,
      () => `limit=${all.length}: status ${answer.status}, Link ${answer.headers.get("link")}`,
    );
    answer = await send("GET", "/plants?limit=0");
    expect("limit=0", answer, 200);
    expectBody("limit=0", answer, []);
    answer = await send("GET", "/plants?limit=2147483647");
    expect("limit=2147483647", answer, 200);
    for (const bad of ["-1", "1.5", "abc", "2147483648", ""]) {
      answer = await send("GET", `/plants?limit=${bad}`);
      expect(`limit=${bad}`, answer, 400);
    }

    // --- delete
    answer = await send("DELETE", `/plants/${ids(2)}`);
    expect("delete", answer, 204);
    check("delete has an empty body", answer.text === "", () => `body ${answer.text}`);
    answer = await send("DELETE", `/plants/${ids(2)}`);
    expect("delete again", answer, 404);
    answer = await send("GET", "/plants");
    check("deleted plant is gone", !answer.text.includes('"Fern"'), () => "still listed");
    answer = await send("DELETE", `/plants/${ids(1)}`, { token: otherToken });
    expect("delete own plant with the same id as another user's", answer, 204);
    answer = await send("DELETE", `/plants/${ids(0)}`, { token: otherToken });
    expect("delete another user's plant", answer, 404);
    answer = await send("GET", "/plants");
    check("another user's delete leaves the plant", answer.text.includes('"Aloe"'), () => "Aloe is gone");
    for (const bad of ["abc", "1.5", "9223372036854775808"]) {
      answer = await send("DELETE", `/plants/${bad}`);
      expect(`delete /plants/${bad}`, answer, 400);
    }

    // --- authentication
    answer = await send("GET", "/plants", { token: null });
    expect("no token", answer, 401);
    check(
      "no token: WWW-Authenticate",
      /^Bearer\b/i.test(answer.headers.get("www-authenticate") ?? "") &&
        !(answer.headers.get("www-authenticate") ?? "").includes("invalid_token"),
      () => `WWW-Authenticate: ${answer.headers.get("www-authenticate")}`,
    );
    answer = await send("GET", "/plants", { token: "pst_not-a-real-token" });
    expect("unknown token", answer, 401);
    check(
      "unknown token: invalid_token",
      /^Bearer\b.*error="invalid_token"/i.test(answer.headers.get("www-authenticate") ?? ""),
      () => `WWW-Authenticate: ${answer.headers.get("www-authenticate")}`,
    );
    check(
      "unknown token is not echoed",
      !answer.text.includes("pst_not-a-real-token"),
      () => "the token appears in the body",
    );
    answer = await send("GET", "/plants", { token: null, headers: { authorization: `bEaReR ${token}` } });
    expect("scheme name in any case", answer, 200);
    answer = await send("GET", "/plants", { token: null, headers: { authorization: `Basic ${token}` } });
    expect("another scheme", answer, 401);
    answer = await send("GET", `/plants?access_token=${encodeURIComponent(token)}`, { token: null });
    expect("token in the query string is ignored", answer, 401);
    answer = await send("POST", "/plants", { token: null, body: `{"id":${ids(5)},"name":"x"}` });
    expect("create without a token", answer, 401);
    answer = await send("DELETE", `/plants/${ids(0)}`, { token: null });
    expect("delete without a token", answer, 401);

    // --- routes
    answer = await send("PUT", "/plants");
    expect("PUT /plants", answer, 405);
    check(
      "PUT /plants: Allow",
      /\bGET\b/.test(answer.headers.get("allow") ?? "") && /\bPOST\b/.test(answer.headers.get("allow") ?? ""),
      () => `Allow: ${answer.headers.get("allow")}`,
    );
    // POST, a method no side routes there (the service also answers GET, PUT and PATCH).
    answer = await send("POST", `/plants/${ids(0)}`);
    expect("POST /plants/{id}", answer, 405);
    check(
      "POST /plants/{id}: Allow",
      /\bDELETE\b/.test(answer.headers.get("allow") ?? ""),
      () => `Allow: ${answer.headers.get("allow")}`,
    );
    answer = await send("GET", "/no-such-route");
    expect("unknown path", answer, 404);
    answer = await send("GET", "/plants/1/2");
    expect("unknown nested path", answer, 404);
  } catch (error) {
    failures.push(`checks aborted: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    for (const plant of created) {
      try {
        await send("DELETE", `/plants/${plant.id}`, { token: plant.token });
      } catch {}
    }
  }
  return failures;
}

if (import.meta.main) {
  const [baseUrl, token, otherToken] = process.argv.slice(2);
  if (!baseUrl || !token || !otherToken) {
    console.error("usage: bun bench/checks.ts <baseUrl> <token> <otherToken>");
    process.exit(2);
  }
  const failures = await runBehaviourChecks(baseUrl, token, otherToken);
  for (const failure of failures) console.log(`FAIL ${failure}`);
  console.log(failures.length === 0 ? "all behaviour checks passed" : `${failures.length} check(s) failed`);
  process.exit(failures.length === 0 ? 0 : 1);
}
