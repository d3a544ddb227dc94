import { describe, expect, test } from "bun:test";
import type { LogLevel } from "../../src/config";
import { createLogger, faultLog, lifecycleLogger } from "../../src/ops/logger";
import type { RequestNotes } from "../../src/ops/request-id";
import { runToExit } from "../support/process";

/** A logger at `level` whose lines are collected, parsed, in `lines`. */
async function collected(level: LogLevel) {
  const raw: string[] = [];
  const made = await createLogger({ level, format: "json", destination: { write: (line) => void raw.push(line) } });
  return { ...made, raw, lines: () => raw.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe("the logger's lines", () => {
  test("one JSON object per line: level and time first, then the fields, then msg", async () => {
    const log = await collected("info");
    log.logger.info({ url: "http://x", port: 3000 }, "listening");
    log.logger.warn("no fields");
    expect(log.raw.every((line) => line.endsWith("}\n") && !line.slice(0, -1).includes("\n"))).toBe(true);
    const [first, second] = log.lines();
    expect(Object.keys(first ?? {})).toEqual(["level", "time", "url", "port", "msg"]);
    expect(first).toMatchObject({ level: "info", url: "http://x", port: 3000, msg: "listening" });
    expect(first?.time).toMatch(ISO);
    expect(second).toEqual({ level: "warn", time: expect.stringMatching(ISO), msg: "no fields" });
  });

  test("an Error is written with its type, message, own fields, cause and stack", async () => {
    const log = await collected("info");
    const error = Object.assign(new Error("disk full", { cause: new TypeError("write failed") }), { code: "ENOSPC" });
    log.logger.error({ err: error }, "store failure");
    const err = log.lines()[0]?.err as Record<string, unknown>;
    expect(err).toMatchObject({ type: "Error", message: "disk full", code: "ENOSPC" });
    expect(err.stack).toContain("Error: disk full");
    expect(err.cause).toMatchObject({ type: "TypeError", message: "write failed" });
  });

  test("a cycle or a BigInt in a logged value still gives a line, and never throws", async () => {
    const log = await collected("info");
    const looped: Record<string, unknown> = { name: "loop" };
    looped.self = looped;
    expect(() => log.logger.error({ detail: looped, rows: 12n }, "odd detail")).not.toThrow();
    expect(log.lines()).toEqual([
      {
        level: "error",
        time: expect.stringMatching(ISO),
        detail: { name: "loop", self: "[Circular]" },
        rows: 12,
        msg: "odd detail",
      },
    ]);
  });

  test("a value that throws when read still gives the line, with its message and a field saying so", async () => {
    const log = await collected("info");
    const hostile = Object.defineProperty(new Error("outer"), "detail", {
      enumerable: true,
      get() {
        throw new RangeError("getter refused");
      },
    });
    expect(() => log.logger.error({ reqId: "r1", err: hostile }, "unhandled error")).not.toThrow();
    expect(log.lines()).toEqual([
      {
        level: "error",
        time: expect.stringMatching(ISO),
        logFieldsUnwritable: "RangeError: getter refused",
        msg: "unhandled error",
      },
    ]);
  });

  test("a line below the level is not written; silent writes nothing, not even errors", async () => {
    const warn = await collected("warn");
    warn.logger.info("dropped");
    warn.logger.error("kept");
    warn.access({ reqId: "a", method: "GET", route: "/plants", status: 200, ms: 0.2, userId: 1 });
    warn.access({ reqId: "b", method: "GET", route: "/plants", status: 503, ms: 0.2, userId: 1 });
    expect(warn.lines().map((line) => [line.level, line.msg, line.reqId])).toEqual([
      ["error", "kept", undefined],
      ["error", "request", "b"],
    ]);

    const silent = await collected("silent");
    silent.logger.error("gone");
    lifecycleLogger(silent.logger).info("gone too");
    silent.access({ reqId: "c", method: "GET", route: "/plants", status: 500, ms: 1, userId: undefined });
    expect(silent.raw).toEqual([]);
  });

  test("start and stop lines pass at warn and error, and follow debug", async () => {
    for (const level of ["warn", "error", "debug"] as const) {
      const log = await collected(level);
      lifecycleLogger(log.logger).info({ signal: "SIGTERM" }, "stopping");
      expect(log.lines()).toEqual([
        { level: "info", time: expect.stringMatching(ISO), signal: "SIGTERM", msg: "stopping" },
      ]);
    }
  });

  test("a fault line carries the request's id, and no reqId when there is no request", async () => {
    const log = await collected("info");
    const notes: RequestNotes = new WeakMap();
    const request = new Request("http://localhost/plants");
    notes.set(request, { id: "req-7", userId: undefined, peer: () => undefined });
    const fault = faultLog(log.logger, notes);
    fault("unhandled error", new RangeError("bad"), request);
    fault("metrics scrape failed", { name: "StoreUnavailable" });
    const [withRequest, without] = log.lines();
    expect(withRequest).toMatchObject({ level: "error", reqId: "req-7", msg: "unhandled error" });
    expect(withRequest?.err).toMatchObject({ type: "RangeError", message: "bad" });
    expect(without).not.toHaveProperty("reqId");
    expect(without?.err).toEqual({ name: "StoreUnavailable" });
  });
});

describe("stdout", () => {
  /** Runs `body` in a fresh process with `logger`, `flush` and `access` from createLogger at info; answers its stdout. */
  async function stdoutOf(body: string) {
    const script = `const { createLogger } = await import(${JSON.stringify(`${import.meta.dir}/../../src/ops/logger.ts`)});
      const { logger, access, flush } = await createLogger({ level: "info", format: "json" });
      ${body}`;
    const { stdout, stderr, code } = await runToExit(["bun", "-e", script]);
    expect({ stderr, code }).toEqual({ stderr: "", code: 0 });
    return stdout;
  }

  test("every line reaches stdout whole and in order when the process flushes before it exits", async () => {
    const out = await stdoutOf(`
      for (let n = 0; n < 5000; n++) logger.info({ n, pad: "x".repeat(100) }, "line");
      await flush();
      process.exit(0);`);
    const lines = out
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as { n: number });
    expect(lines.map((line) => line.n)).toEqual(Array.from({ length: 5000 }, (_, n) => n));
  });

  test("a lone line leaves without a flush while the process is quiet", async () => {
    const out = await stdoutOf(`
      access({ reqId: "quiet", method: "GET", route: "/healthz", status: 200, ms: 0.1, userId: undefined });
      await Bun.sleep(300);
      process.exit(0);`);
    expect(JSON.parse(out)).toMatchObject({ level: "info", reqId: "quiet", msg: "request" });
  });
});
