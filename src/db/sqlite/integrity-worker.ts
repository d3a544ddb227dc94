/** The integrity pass's thread (integrity.ts): a quick check finds a damaged page, on its own read-only connection. */
import { Database } from "bun:sqlite";
import type { IntegrityReport } from "./integrity";

declare const self: Worker;

const MAX_FINDINGS = 10;

self.onmessage = (event: MessageEvent<{ path: string }>) => {
  let report: IntegrityReport;
  try {
    const sqlite = new Database(event.data.path, { readonly: true });
    try {
      const rows = sqlite.query<{ quick_check: string }, []>(`PRAGMA quick_check(${MAX_FINDINGS})`).all();
      const findings = rows.flatMap((row) => row.quick_check.split("\n")).filter((line) => line !== "");
      report = findings.length === 1 && findings[0] === "ok" ? { damaged: false } : { damaged: true, findings };
    } finally {
      sqlite.close();
    }
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const text = error instanceof Error ? error.message : String(error);
    // Damage can also stop the check itself (SQLITE_CORRUPT, SQLITE_NOTADB); anything else is not a finding.
    report =
      typeof code === "string" && /^SQLITE_(CORRUPT|NOTADB)/.test(code)
        ? { damaged: true, findings: [text] }
        : { damaged: false, failed: text };
  }
  self.postMessage(report);
};
