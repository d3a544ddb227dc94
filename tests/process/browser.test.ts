import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { type RunningServer, scratchDir, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { bootstrapToken } from "../support/users";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

/*
 * Swagger UI in a real headless Chromium (Debian's, at /usr/bin/chromium; nothing is
 * downloaded), against the real server, with every request that leaves the server's own
 * origin aborted: the page must work offline.
 */
const CHROMIUM = "/usr/bin/chromium";
const SCREENSHOT = join(new URL("../..", import.meta.url).pathname, "test-artifacts", "swagger.png");

/** The bootstrap token the first start prints (alone on a line, or inside a JSON log line). */
const tokenOf = bootstrapToken;

/** An operation block of Swagger UI, e.g. `DELETE /plants/{id}`. */
const operation = (page: Page, method: string, path: string) =>
  page
    .locator(`.opblock.opblock-${method.toLowerCase()}`)
    .filter({ has: page.locator(`.opblock-summary-path[data-path="${path}"]`) });

const OPERATIONS = [
  ["POST", "/plants"],
  ["GET", "/plants"],
  ["GET", "/plants/{id}"],
  ["PUT", "/plants/{id}"],
  ["PATCH", "/plants/{id}"],
  ["DELETE", "/plants/{id}"],
  ["POST", "/webhooks"],
  ["GET", "/webhooks"],
  ["DELETE", "/webhooks/{id}"],
  ["GET", "/webhooks/{id}/deliveries"],
  // The document's `webhooks` section: what an endpoint receives.
  ["POST", "/plant/webhook"],
] as const;

/*
 * Scripts run in the page are given as text: this project's TypeScript has no DOM types.
 * The violation recorder is injected by the browser itself, before the page's own scripts, so
 * the page's policy does not apply to it.
 */
const RECORD_CSP_VIOLATIONS = `window.cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) =>
  window.cspViolations.push(event.violatedDirective + " " + event.blockedURI));`;

/**
 * A browser context that aborts, and records, every request leaving the server's origin; each
 * page records the Content-Security-Policy violations it sees (`cspViolationsOf`).
 */
async function offlineContext(browser: Browser, serverUrl: string) {
  const origin = new URL(serverUrl).origin;
  const leftOrigin: string[] = [];
  const context: BrowserContext = await browser.newContext({ viewport: { width: 1280, height: 1600 } });
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (new URL(url).origin === origin) return route.continue();
    leftOrigin.push(url);
    return route.abort("blockedbyclient");
  });
  await context.addInitScript(RECORD_CSP_VIOLATIONS);
  return { context, leftOrigin };
}

const cspViolationsOf = (page: Page) => page.evaluate<string[]>("window.cspViolations");

/** Everything the page's origin keeps in Web Storage, as text. */
const storedByPage = (page: Page) =>
  page.evaluate<string>("JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])");

/** The security schemes Swagger UI holds credentials for, by name. */
const authorizedSchemes = (page: Page) =>
  page.evaluate<string[]>("Object.keys(window.ui.authSelectors.authorized().toJS())");

/** Opens Swagger UI and waits until it shows every operation and the webhook. */
async function openSwagger(page: Page, serverUrl: string, path = "/swagger") {
  const response = await page.goto(`${serverUrl}${path}`);
  for (const [method, path] of OPERATIONS) await operation(page, method, path).waitFor();
  return response;
}

/**
 * Pastes the token into the bearer scheme's dialog. Swagger UI labels its "Authorize" and
 * "Logout" buttons "Apply credentials" and "Remove authorization".
 */
async function authorize(page: Page, token: string) {
  await page.locator(".auth-wrapper").getByRole("button", { name: "Authorize" }).click();
  const dialog = page.locator(".dialog-ux .modal-ux");
  await dialog.getByLabel("auth-bearer-value").fill(token);
  await dialog.getByRole("button", { name: "Apply credentials" }).click();
  await dialog.getByRole("button", { name: "Remove authorization" }).waitFor();
  await dialog.locator("button.btn-done").click();
  await dialog.waitFor({ state: "detached" });
}

let scratch: ReturnType<typeof scratchDir> | undefined;
let server: RunningServer | undefined;
/** A second server, with SWAGGER_PERSIST_AUTHORIZATION=true. */
let persisting: RunningServer | undefined;
let browser: Browser | undefined;

/**
 * Chromium takes a good 20 s of a two-core machine here: `bun run test` runs this file
 * (TEST_BROWSER=1, in its SQLite run: the servers here are on SQLite files whatever the run);
 * the fast loop, plain `bun test`, leaves it out.
 */
const browserRun = process.env.TEST_BROWSER === "1";

// Both servers and the browser start at once: each start is mostly waiting.
beforeAll(async () => {
  if (!browserRun) return;
  scratch = scratchDir();
  [server, persisting, browser] = await Promise.all([
    startServer({ DATABASE_URL: join(scratch.dir, "plants.sqlite") }),
    startServer({ DATABASE_URL: join(scratch.dir, "persisting.sqlite"), SWAGGER_PERSIST_AUTHORIZATION: "true" }),
    chromium.launch({
      executablePath: CHROMIUM,
      // No sandbox: CI runs as root in a container. No /dev/shm or GPU there either.
      args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
    }),
  ]);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await Promise.all([server?.stop(), persisting?.stop()]);
  scratch?.cleanup();
}, 120_000);

describe.if(browserRun)("Swagger UI in a headless browser, offline", () => {
  test("renders the plant and webhook operations, the webhook itself and the paging parameters, authorizes with a token and executes GET /plants", async () => {
    if (!server || !browser) throw new Error("set-up failed");
    const token = tokenOf(server);
    expect(token).toBeDefined();
    const created = await fetch(`${server.url}/plants`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ id: 1, name: "Monstera", tag: "tropical" }),
    });
    expect(created.status).toBe(200);

    const { context, leftOrigin } = await offlineContext(browser, server.url);
    try {
      const page = await context.newPage();
      const problems: string[] = [];
      page.on("console", (message) => {
        if (message.type() === "error") problems.push(`console: ${message.text()}`);
      });
      page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
      page.on("requestfailed", (request) => problems.push(`failed: ${request.url()} ${request.failure()?.errorText}`));
      page.on("response", (response) => {
        if (response.status() >= 400) problems.push(`${response.status()}: ${response.url()}`);
      });

      const response = await openSwagger(page, server.url);
      const policy = response?.headers()["content-security-policy"] ?? "";
      expect(policy).toStartWith("default-src 'none'; script-src 'self' 'sha256-");
      expect(policy).toContain("frame-ancestors 'none'");
      expect(response?.headers()["x-frame-options"]).toBe("DENY");
      for (const [method, path] of OPERATIONS) {
        expect(await operation(page, method, path).locator(".opblock-summary-method").textContent()).toBe(method);
      }

      await authorize(page, token);
      expect(await authorizedSchemes(page)).toEqual(["bearerAuth"]);

      // Try it out → Execute on GET /plants.
      const list = operation(page, "GET", "/plants");
      await list.locator(".opblock-summary-control").click();
      await list.getByRole("button", { name: "Try it out" }).click();
      // The paging and filter parameters are shown beside limit.
      for (const name of ["limit", "after", "tag"]) await list.locator(`tr[data-param-name="${name}"]`).waitFor();
      await list.getByRole("button", { name: "Execute" }).click();
      const live = list.locator(".live-responses-table .response");
      await live.locator(".response-col_status", { hasText: "200" }).waitFor();
      expect(await live.locator(".response-col_description").textContent()).toContain('"Monstera"');
      expect(await list.locator(".curl-command").textContent()).toContain("Authorization: Bearer");

      mkdirSync(join(SCREENSHOT, ".."), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      expect(statSync(SCREENSHOT).size).toBeGreaterThan(0);

      // The token lives in the tab's memory only: not in Web Storage, and gone after a reload.
      expect(await storedByPage(page)).not.toContain(token);
      expect(await cspViolationsOf(page)).toEqual([]);
      await openSwagger(page, server.url);
      expect(await authorizedSchemes(page)).toEqual([]);
      expect(await storedByPage(page)).not.toContain(token);

      expect(leftOrigin).toEqual([]);
      expect(await cspViolationsOf(page)).toEqual([]);
      // A desktop browser asks for /favicon.ico on its own (headless Chromium does not, and the
      // offline context's routing cannot see it): asked for here, outside that context.
      const iconPage = await browser.newPage();
      const icon = await iconPage.goto(`${server.url}/favicon.ico`);
      expect([icon?.status(), icon?.headers()["content-type"]]).toEqual([200, "image/png"]);
      await iconPage.close();
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);

  test("executes a PATCH with If-Match: 200, the new ETag among the response headers; the stale ETag then 412", async () => {
    if (!server || !browser) throw new Error("set-up failed");
    const token = tokenOf(server);
    const headers = { authorization: `Bearer ${token}` };
    const created = await fetch(`${server.url}/plants`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ id: 30, name: "Fern", tag: "shade" }),
    });
    const etag = created.headers.get("etag") as string;
    expect(etag).toMatch(/^"[^"]+"$/);

    const { context, leftOrigin } = await offlineContext(browser, server.url);
    try {
      const page = await context.newPage();
      await openSwagger(page, server.url);
      await authorize(page, token);
      const patch = operation(page, "PATCH", "/plants/{id}");
      await patch.locator(".opblock-summary-control").click();
      await patch.getByRole("button", { name: "Try it out" }).click();
      await patch.locator('tr[data-param-name="id"] input').fill("30");
      await patch.locator('tr[data-param-name="If-Match"] input').fill(etag);
      await patch.locator(".body-param textarea").fill('{"name": "Ivy"}');
      const execute = async (status: string) => {
        await patch.getByRole("button", { name: "Execute" }).click();
        const live = patch.locator(".live-responses-table .response");
        await live.locator(".response-col_status", { hasText: status }).waitFor();
        return (await live.locator(".response-col_description").textContent()) ?? "";
      };

      const answer = await execute("200");
      expect(answer).toContain('"Ivy"');
      const stored = await fetch(`${server.url}/plants/30`, { headers });
      expect(await stored.json()).toEqual({ name: "Ivy", tag: "shade" });
      const newEtag = stored.headers.get("etag") as string;
      expect(newEtag).not.toBe(etag);
      expect(answer).toContain(`etag: ${newEtag}`);
      expect(await patch.locator(".curl-command").textContent()).toContain(`If-Match: ${etag}`);

      // The same stale ETag again: Swagger shows the 412, and the plant stays as it is.
      await patch.getByRole("button", { name: "Clear" }).click();
      expect(await execute("412")).toContain('"error": 412');
      expect(await (await fetch(`${server.url}/plants/30`, { headers })).json()).toEqual({ name: "Ivy", tag: "shade" });
      expect(leftOrigin).toEqual([]);
      expect(await cspViolationsOf(page)).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);

  test("no other site can show the page in a frame", async () => {
    if (!server || !browser) throw new Error("set-up failed");
    const swaggerUrl = `${server.url}/swagger`;
    // Another origin (another port) that frames the page; loopback too, as Chromium lets only
    // a local page frame a local one.
    const framer = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () =>
        new Response(`<iframe src="${swaggerUrl}" onload="document.title = 'frame loaded'"></iframe>`, {
          headers: { "content-type": "text/html" },
        }),
    });
    const { context } = await offlineContext(browser, server.url);
    try {
      // Routes registered later are tried first: the framer's origin is let through.
      await context.route(`${framer.url.origin}/**`, (route) => route.continue());
      const page = await context.newPage();
      const loaded = page.waitForResponse(swaggerUrl);
      await page.goto(framer.url.href);
      expect((await loaded).headers()["x-frame-options"]).toBe("DENY");
      await page.waitForFunction("document.title === 'frame loaded'");
      // Chromium shows its error page in place of a page that refuses to be framed.
      const frame = page.frames().find((candidate) => candidate !== page.mainFrame());
      expect(frame?.url()).toBe("chrome-error://chromewebdata/");
      expect(await frame?.locator("#swagger-ui").count()).toBe(0);
    } finally {
      await context.close();
      await framer.stop(true);
    }
  }, 120_000);

  // One page for both: each Swagger UI load costs seconds of a two-core machine's CPU.
  test("works at /swagger/ too (the trailing slash changes nothing) and resolves every schema reference: examples show the Plant, no resolver errors", async () => {
    if (!server || !browser) throw new Error("set-up failed");
    const { context, leftOrigin } = await offlineContext(browser, server.url);
    try {
      const page = await context.newPage();
      const response = await openSwagger(page, server.url, "/swagger/");
      expect(response?.status()).toBe(200);
      const errors = page.locator(".errors-wrapper");
      expect(await errors.allTextContents()).toEqual([]);
      for (const [method, path] of OPERATIONS)
        await operation(page, method, path).locator(".opblock-summary-control").click();
      // A 200 example built from the Plant schema, or the resolver's error panel: whichever comes.
      for (const [method, path] of OPERATIONS.slice(0, 2)) {
        const example = operation(page, method, path).locator('tr.response[data-code="200"] .example', {
          hasText: '"name"',
        });
        await example.or(errors).first().waitFor();
      }
      expect(await errors.allTextContents()).toEqual([]);
      // Error examples show their own status, not the 0 Swagger UI makes up for an integer.
      const notFound = operation(page, "GET", "/plants/{id}").locator('tr.response[data-code="404"] .example');
      expect(await notFound.textContent()).toContain('"error": 404');
      expect(await page.locator(".example").allTextContents()).not.toContainEqual(
        expect.stringContaining('"error": 0'),
      );
      // The webhook entry says whose request it is.
      expect(await operation(page, "POST", "/plant/webhook").textContent()).toContain("sends to YOUR receiver");
      expect(leftOrigin).toEqual([]);
      expect(await cspViolationsOf(page)).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);

  test("with SWAGGER_PERSIST_AUTHORIZATION=true the token is kept in localStorage, across reloads", async () => {
    if (!browser || !persisting) throw new Error("set-up failed");
    const { context } = await offlineContext(browser, persisting.url);
    try {
      const token = tokenOf(persisting);
      const page = await context.newPage();
      const response = await openSwagger(page, persisting.url);
      // Its own hash: the policy follows the page's script.
      expect(response?.headers()["content-security-policy"]).toContain("frame-ancestors 'none'");
      await authorize(page, token);
      expect(await storedByPage(page)).toContain(token);
      await openSwagger(page, persisting.url);
      expect(await authorizedSchemes(page)).toEqual(["bearerAuth"]);
      expect(await cspViolationsOf(page)).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);
});
