import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_RETRY_DELAYS_MS } from "../../src/config";
import { createMetrics } from "../../src/ops/metrics";
import { MAX_ENDPOINTS } from "../../src/webhooks/routes";
import {
  ATTEMPT_TIMEOUT_MS,
  ATTEMPTS_PER_SECOND,
  CIRCUIT_FAILURES,
  CIRCUIT_REST_MS,
  CONNECT_TIMEOUT_MS,
  LEASE_MS,
  PER_ENDPOINT,
} from "../../src/webhooks/rules";
import { newSecret, signedHeaders } from "../../src/webhooks/signing";
import { runToExit, scratchDir } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

/**
 * The receiver snippets of docs/webhooks.md, run as a receiver would paste them: each fenced
 * block is found by its first comment line, written to a file and called from a small harness,
 * on deliveries signed by the service's own signing code. The figures those pages give are the code's.
 */
const ROOT = new URL("../..", import.meta.url).pathname;
const page = (path: string) => Bun.file(join(ROOT, path)).text();
const [README, WEBHOOKS, OPERATIONS] = (await Promise.all(
  ["README.md", "docs/webhooks.md", "docs/operations.md"].map(page),
)) as [string, string, string];
// Debian's, as tests/prometheus.ts uses: .ci/run provisions it.
const PYTHON = "/usr/bin/python3";

function snippet(language: string, firstLine: string): string {
  const blocks = [...WEBHOOKS.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)].filter(
    ([, lang, body]) => lang === language && body?.startsWith(firstLine),
  );
  if (blocks.length !== 1) throw new Error(`docs/webhooks.md: expected one ${language} block starting "${firstLine}"`);
  return blocks[0]?.[2] as string;
}

interface Case {
  secret: string;
  headers: Record<string, string>;
  body: string;
  /** Pins the verifier's clock (the known-answer vector); otherwise it reads its own. */
  now?: number;
}

const TS_HARNESS = `import { verifyWebhook } from "./verify-webhook.ts";
const cases = await Bun.stdin.json();
const results = cases.map((c) => verifyWebhook(c.secret, new Headers(c.headers), c.body, ...(c.now === undefined ? [] : [c.now])));
console.log(JSON.stringify(results));
`;

// Header names as a client sends them (Webhook-Id): http.server's own header type must find them.
const PY_HARNESS = `import json, sys
from email.message import Message
from verify_webhook import verify_webhook

def headers_of(plain):
    message = Message()
    for name, value in plain.items():
        message[name.title()] = value
    return message

cases = json.load(sys.stdin)
print(json.dumps([verify_webhook(c["secret"], headers_of(c["headers"]), c["body"].encode(), c.get("now")) for c in cases]))
`;

let dir: string;
let cleanup: () => void;
beforeAll(() => {
  ({ dir, cleanup } = scratchDir());
  writeFileSync(join(dir, "verify-webhook.ts"), snippet("ts", "// verify-webhook.ts"));
  writeFileSync(join(dir, "harness.ts"), TS_HARNESS);
  writeFileSync(join(dir, "verify_webhook.py"), snippet("python", "# verify_webhook.py"));
  writeFileSync(join(dir, "harness.py"), PY_HARNESS);
  // The project's strict settings for the type check; its node_modules for node:crypto's types.
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({ extends: join(ROOT, "tsconfig.json"), files: ["verify-webhook.ts"] }),
  );
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
});
afterAll(() => cleanup());

async function verdicts(command: string[], cases: Case[]): Promise<boolean[]> {
  const { stdout, stderr, code } = await runToExit(command, { cwd: dir, stdin: JSON.stringify(cases) });
  if (code !== 0) throw new Error(`${command.join(" ")} exited ${code}: ${stderr}`);
  return JSON.parse(stdout);
}

const nowSeconds = () => Math.floor(Date.now() / 1000);
const BODY = '{"id":9223372036854775807,"name":"Fern ☘","tag":"shade"}';

/** Every case with the verdict a correct verifier gives; built fresh so timestamps are current. */
function cases(): Array<[string, Case, boolean]> {
  const secret = newSecret();
  const signed = (body: string, at = nowSeconds()) => ({
    secret,
    headers: signedHeaders(secret, "msg_readme", at, body),
    body,
  });
  const good = signed(BODY);
  const { "webhook-id": _, ...withoutId } = good.headers;
  return [
    ["a fresh delivery, exact int64 and non-ASCII", good, true],
    ["the smallest int64, no tag", signed('{"id":-9223372036854775808,"name":"Monstera"}'), true],
    ["4 minutes old, within the tolerance", signed(BODY, nowSeconds() - 240), true],
    ["a changed body (the id one lower)", { ...good, body: BODY.replace("807", "806") }, false],
    ["another secret", { ...good, secret: newSecret() }, false],
    ["10 minutes old", signed(BODY, nowSeconds() - 600), false],
    ["10 minutes ahead", signed(BODY, nowSeconds() + 600), false],
    ["no webhook-id", { ...good, headers: withoutId }, false],
    [
      "a signature that is not base64",
      { ...good, headers: { ...good.headers, "webhook-signature": "v1,ünicode*" } },
      false,
    ],
    [
      "a list where a later entry matches",
      { ...good, headers: { ...good.headers, "webhook-signature": `v1,AAAA ${good.headers["webhook-signature"]}` } },
      true,
    ],
    [
      "the Standard Webhooks known-answer vector",
      {
        secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        headers: {
          "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
          "webhook-timestamp": "1614265330",
          "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
        },
        body: '{"test": 2432232314}',
        now: 1614265330,
      },
      true,
    ],
  ];
}

describe("the webhook receiver snippets of docs/webhooks.md", () => {
  for (const [language, command] of [
    ["TypeScript, run with bun", ["bun", "harness.ts"]],
    ["Python, run with python3", [PYTHON, "harness.py"]],
  ] as const) {
    test(`${language}: accepts genuine deliveries, refuses forged, changed and stale ones`, async () => {
      const all = cases();
      const got = await verdicts(
        [...command],
        all.map(([, c]) => c),
      );
      expect(all.map(([name], i) => [name, got[i]])).toEqual(all.map(([name, , want]) => [name, want]));
    });
  }

  test("the TypeScript snippet passes the project's strict type check", async () => {
    const { stdout, stderr, code } = await runToExit(["bun", "check"], { cwd: dir });
    expect(code === 0 ? "no type errors" : `${stdout}${stderr}`).toBe("no type errors");
  });
});

describe("the webhook figures of the README and docs/ are the code's", () => {
  test("the cap, the attempt timeout, the lease and the default retry delays", () => {
    expect(WEBHOOKS).toContain(`you already have ${MAX_ENDPOINTS} webhook endpoints`);
    expect(WEBHOOKS).toContain(`a 2xx comes within ${ATTEMPT_TIMEOUT_MS / 1000} s`);
    expect(WEBHOOKS).toContain(`with a ${LEASE_MS / 1000} s lease`);
    expect(README).toContain(`| \`WEBHOOK_RETRY_DELAYS\` | \`${DEFAULT_RETRY_DELAYS_MS.join(",")}\` |`);
  });

  test("the connect timeout, the cap per endpoint, the circuit and the budget", () => {
    expect(WEBHOOKS).toContain(`up within ${CONNECT_TIMEOUT_MS / 1000} s of those ${ATTEMPT_TIMEOUT_MS / 1000}`);
    expect(WEBHOOKS).toContain(`at most ${PER_ENDPOINT} attempts at once to one endpoint`);
    expect(WEBHOOKS).toContain(`After ${CIRCUIT_FAILURES} attempts in a row fail`);
    expect(WEBHOOKS).toContain(`their retries unspent, and ${CIRCUIT_REST_MS / 1000} s`);
    expect(WEBHOOKS).toContain(`starts at most ${ATTEMPTS_PER_SECOND} a second`);
  });

  test("the webhook metrics listed are the ones a scrape shows", () => {
    const scraped = new Set(
      createMetrics({ databaseBytes: () => 0 })
        .render()
        .matchAll(/^# TYPE (plant_store_webhook_\w+)/gm)
        .map(([, name]) => name),
    );
    const listed = new Set(OPERATIONS.matchAll(/^\| `(plant_store_webhook_\w+)/gm).map(([, name]) => name));
    expect([...listed].sort()).toEqual([...scraped].sort());
  });
});
