/**
 * `bun bench/cpu-profile-top.ts <file.cpuprofile> [count]`: the functions a CPU profile (written by
 * `bun --cpu-prof`) spent its time in. Self time: the samples a function was on top of the stack;
 * total time: the samples it was anywhere on the stack (once per sample, recursion included). Each
 * sample's time is its entry of `timeDeltas` (microseconds since the sample before).
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { ROOT } from "./targets";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface FunctionTime {
  name: string;
  /** Where it is: a path under the repository, or a module of Bun's. */
  where: string;
  selfMs: number;
  totalMs: number;
}

export interface ProfileSummary {
  /** Time covered by the samples, idle included. */
  sampledMs: number;
  /** Samples of the idle loop ("(idle)"), in ms. */
  idleMs: number;
  functions: FunctionTime[];
}

const where = ({ url, lineNumber }: ProfileNode["callFrame"]) => {
  if (url === "") return "";
  const path = url.startsWith("file://") ? new URL(url).pathname : url;
  const shown = path.startsWith(ROOT) ? relative(ROOT, path) : path.replace(/^.*\/node_modules\//, "node_modules/");
  return `${shown}:${lineNumber + 1}`;
};

export function summariseProfile(file: string): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const keyOf = (node: ProfileNode) => `${node.callFrame.functionName || "(anonymous)"}\t${where(node.callFrame)}`;
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let sampledUs = 0;
  let idleUs = 0;
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    sampledUs += us;
    const node = byId.get(id);
    if (!node) return;
    if (node.callFrame.functionName === "(idle)") idleUs += us;
    const top = keyOf(node);
    self.set(top, (self.get(top) ?? 0) + us);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const key = keyOf(byId.get(at) as ProfileNode);
      if (seen.has(key)) continue;
      seen.add(key);
      total.set(key, (total.get(key) ?? 0) + us);
    }
  });
  const functions = [...total.entries()].map(([key, us]) => {
    const [name, at] = key.split("\t") as [string, string];
    return { name, where: at, selfMs: (self.get(key) ?? 0) / 1000, totalMs: us / 1000 };
  });
  return { sampledMs: sampledUs / 1000, idleMs: idleUs / 1000, functions };
}

const pct = (ms: number, of: number) => `${((100 * ms) / of).toFixed(1)} %`;

/** Prints the top `count` by self time, then the repository's own functions by total time. */
export function printProfile(file: string, count = 10) {
  const { sampledMs, idleMs, functions } = summariseProfile(file);
  const busy = sampledMs - idleMs;
  console.log(
    `\nCPU profile ${file}: ${(sampledMs / 1000).toFixed(1)} s sampled, ${(busy / 1000).toFixed(1)} s busy (not idle) on the main thread`,
  );
  console.log(`\nTop ${count} by self time (share of busy time):\n`);
  console.log("| function | where | self ms | self | total ms |");
  console.log("|---|---|---|---|---|");
  const bySelf = functions.filter((f) => f.name !== "(idle)").sort((a, b) => b.selfMs - a.selfMs);
  for (const f of bySelf.slice(0, count))
    console.log(
      `| ${f.name} | ${f.where} | ${f.selfMs.toFixed(0)} | ${pct(f.selfMs, busy)} | ${f.totalMs.toFixed(0)} |`,
    );
  console.log(`\nTop ${count} of src/ by total time (self and callees):\n`);
  console.log("| function | where | total ms | total | self ms |");
  console.log("|---|---|---|---|---|");
  const ours = functions.filter((f) => f.where.startsWith("src/")).sort((a, b) => b.totalMs - a.totalMs);
  for (const f of ours.slice(0, count))
    console.log(
      `| ${f.name} | ${f.where} | ${f.totalMs.toFixed(0)} | ${pct(f.totalMs, busy)} | ${f.selfMs.toFixed(0)} |`,
    );
}

if (import.meta.main) {
  const [file, count] = process.argv.slice(2);
  if (!file) {
    console.error("usage: bun bench/cpu-profile-top.ts <file.cpuprofile> [count]");
    process.exit(2);
  }
  printProfile(file, Number(count ?? 10));
}
