import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { type RunningServer, scratchDir, startServer } from "./process";

/*
 * Swagger UI in a real headless Chromium (Debian's, at /usr/bin/chromium; nothing is
 * downloaded), against the real server, with every request that leaves the server's own
 * origin aborted: the page must work offline.
 */
const CHROMIUM = "/usr/bin/chromium";
const SCREENSHOT = join(new URL("..", import.meta.url).pathname, "test-artifacts", "swagger.png");

/** The bootstrap token the first start prints (alone on a line, or inside a JSON log line). */
const tokenOf = (server: RunningServer) => /pst_[A-Za-z0-9_-]+/.exec(server.startupOutput)?.[0] as string;

/** An operation block of Swagger UI, e.g. `DELETE /plants/{id}`. */
const operation = (page: Page, method: string, path: string) =>
  page
    .locator(`.opblock.opblock-${method.toLowerCase()}`)
    .filter({ has: page.locator(`.opblock-summary-path[data-path="${path}"]`) });

const OPERATIONS = [
  ["POST", "/plants"],
  ["GET", "/plants"],
  ["DELETE", "/plants/{id}"],
] as const;

/** A browser context that aborts, and records, every request leaving the server's origin. */
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
  return { context, leftOrigin };
}

let scratch: ReturnType<typeof scratchDir>;
let server: RunningServer | undefined;
let browser: Browser | undefined;

beforeAll(async () => {
  scratch = scratchDir();
  server = await startServer({ DATABASE_URL: join(scratch.dir, "plants.sqlite") });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    // No sandbox: CI runs as root in a container. No /dev/shm or GPU there either.
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  scratch.cleanup();
}, 60_000);

describe("Swagger UI in a headless browser, offline", () => {
  test("renders the three operations, authorizes with a token and executes GET /plants", async () => {
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

      await page.goto(`${server.url}/swagger`);
      for (const [method, path] of OPERATIONS) {
        const block = operation(page, method, path);
        await block.waitFor();
        expect(await block.locator(".opblock-summary-method").textContent()).toBe(method);
      }

      // Authorize: paste the token into the bearer scheme's dialog. Swagger UI labels its
      // "Authorize" and "Logout" buttons "Apply credentials" and "Remove authorization".
      await page.locator(".auth-wrapper").getByRole("button", { name: "Authorize" }).click();
      const dialog = page.locator(".dialog-ux .modal-ux");
      await dialog.getByLabel("auth-bearer-value").fill(token);
      await dialog.getByRole("button", { name: "Apply credentials" }).click();
      await dialog.getByRole("button", { name: "Remove authorization" }).waitFor();
      await dialog.locator("button.btn-done").click();
      await dialog.waitFor({ state: "detached" });

      // Try it out → Execute on GET /plants.
      const list = operation(page, "GET", "/plants");
      await list.locator(".opblock-summary-control").click();
      await list.getByRole("button", { name: "Try it out" }).click();
      await list.getByRole("button", { name: "Execute" }).click();
      const live = list.locator(".live-responses-table .response");
      await live.locator(".response-col_status", { hasText: "200" }).waitFor();
      expect(await live.locator(".response-col_description").textContent()).toContain('"Monstera"');
      expect(await list.locator(".curl-command").textContent()).toContain("Authorization: Bearer");

      mkdirSync(join(SCREENSHOT, ".."), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      expect(statSync(SCREENSHOT).size).toBeGreaterThan(0);

      expect(leftOrigin).toEqual([]);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);

  test("resolves every schema reference: examples show the Plant, no resolver errors", async () => {
    if (!server || !browser) throw new Error("set-up failed");
    const { context, leftOrigin } = await offlineContext(browser, server.url);
    try {
      const page = await context.newPage();
      await page.goto(`${server.url}/swagger`);
      for (const [method, path] of OPERATIONS)
        await operation(page, method, path).locator(".opblock-summary-control").click();
      const errors = page.locator(".errors-wrapper");
      // A 200 example built from the Plant schema, or the resolver's error panel: whichever comes.
      for (const [method, path] of OPERATIONS.slice(0, 2)) {
        const example = operation(page, method, path).locator('tr.response[data-code="200"] .example', {
          hasText: '"name"',
        });
        await example.or(errors).first().waitFor();
      }
      expect(await errors.allTextContents()).toEqual([]);
      expect(leftOrigin).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});
