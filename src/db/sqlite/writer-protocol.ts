import { type StoreFailureKind, StoreUnavailable, storeFailureKind } from "../../core/failures";
import type { Steps, Write } from "./writer";

/** A thread's script beside this file; in a compiled binary, under the path it has below src/ (package.json's build). */
export const threadScript = (name: string) =>
  new URL(import.meta.url.includes("/$bunfs/") ? `./db/sqlite/${name}` : `./${name}`, import.meta.url);

export type ToWriter =
  | {
      type: "init";
      path: string;
      synchronous: string;
      lockTimeoutMs: number;
      checkpointing: Int32Array;
      walIndex: number | undefined;
    }
  | { type: "writes"; writes: Array<{ id: number; write: Write | Steps; bookkeeping: boolean }> }
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
