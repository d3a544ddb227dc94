import type { SQLQueryBindings } from "bun:sqlite";
import { type StoreFailureKind, StoreUnavailable, storeFailureKind } from "../../core/failures";
import type { Steps, Write } from "./writer";

/**
 * A write as it crosses to the thread, one flat array: [id, bookkeeping, answer (-1: no savepoint),
 * step count, then each step's sql, mode, exact, param count and params]. Structured clone copies
 * it in a third of the time the nested objects take (docs/decisions/0015-writer-wire.md).
 */
export type WireWrite = Array<SQLQueryBindings | undefined>;

export function toWireWrite(id: number, write: Write | Steps, bookkeeping: boolean): WireWrite {
  const steps = "steps" in write ? write.steps : [write];
  const answer = "steps" in write ? (write.answer ?? steps.length - 1) : -1;
  const wire: WireWrite = [id, bookkeeping, answer, steps.length];
  for (const { sql, mode, exact = false, params } of steps) wire.push(sql, mode, exact, params.length, ...params);
  return wire;
}

export function fromWireWrite(wire: WireWrite): { id: number; write: Write | Steps; bookkeeping: boolean } {
  const steps: Write[] = [];
  let at = 4;
  for (let left = wire[3] as number; left > 0; left--) {
    const end = at + 4 + (wire[at + 3] as number);
    steps.push({
      sql: wire[at] as string,
      mode: wire[at + 1] as Write["mode"],
      exact: wire[at + 2] as boolean,
      params: wire.slice(at + 4, end) as SQLQueryBindings[],
    });
    at = end;
  }
  const answer = wire[2] as number;
  return {
    id: wire[0] as number,
    bookkeeping: wire[1] as boolean,
    write: answer < 0 ? (steps[0] as Write) : { steps, answer },
  };
}

export type ToWriter =
  | { type: "init"; path: string; synchronous: string; lockTimeoutMs: number }
  | { type: "writes"; writes: WireWrite[] }
  | { type: "probe" }
  | { type: "close" };

export interface WireError {
  kind?: StoreFailureKind;
  message: string;
  code?: string;
}

export type FromWriter =
  | { type: "open-failed"; error: WireError }
  | { type: "done"; results: Array<[id: number, ok: true, value: unknown] | [id: number, ok: false, error: WireError]> }
  | { type: "health"; problem: StoreFailureKind | undefined; error?: WireError }
  | { type: "closed" };

export function toWire(error: unknown): WireError {
  const kind = storeFailureKind(error);
  // The store's own error (SQLITE_FULL…) says more than the StoreUnavailable around it.
  const inner = error instanceof StoreUnavailable && error.cause instanceof Error ? error.cause : error;
  const message = inner instanceof Error ? inner.message : String(inner);
  const code = (inner as { code?: unknown } | undefined)?.code;
  return { kind, message, code: typeof code === "string" ? code : undefined };
}

export function fromWire(wire: WireError): Error {
  const cause = Object.assign(new Error(wire.message), wire.code === undefined ? {} : { code: wire.code });
  return wire.kind === undefined ? cause : new StoreUnavailable(wire.kind, { cause });
}
