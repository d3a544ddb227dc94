/** The thread's script beside this file; in a compiled binary, under the path it has below src/ (package.json's build). */
const SCRIPT = new URL(
  import.meta.url.includes("/$bunfs/") ? "./db/sqlite/integrity-worker.ts" : "./integrity-worker.ts",
  import.meta.url,
);

export type IntegrityReport = { damaged: true; findings: string[] } | { damaged: false; failed?: string };

/**
 * Reads every page once, on its own thread (integrity-worker.ts): start-up reads only the header
 * and schema, so deeper damage would stay unseen until a request read it.
 */
export function checkIntegrity(path: string): { report: Promise<IntegrityReport>; stop(): void } {
  const worker = new Worker(SCRIPT);
  const { promise, resolve } = Promise.withResolvers<IntegrityReport>();
  worker.onmessage = (event: MessageEvent<IntegrityReport>) => resolve(event.data);
  worker.onerror = (event) => resolve({ damaged: false, failed: event.message });
  worker.addEventListener("close", () => resolve({ damaged: false, failed: "its thread exited" }));
  // A stopping process does not wait for it.
  worker.unref();
  worker.postMessage({ path });
  return {
    report: promise.finally(() => worker.terminate()),
    stop() {
      resolve({ damaged: false });
      worker.terminate();
    },
  };
}
