import { runToExit } from "./process";

/**
 * Parses a scrape with the Prometheus project's own Python client parser (Debian's
 * python3-prometheus-client, installed by .ci/run): the npm parsers mangle labelled histograms.
 */
const PARSER = `
import json, math, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        value = s.value if math.isfinite(s.value) else str(s.value)
        out.append({"family": family.name, "type": family.type, "name": s.name, "labels": s.labels, "value": value})
print(json.dumps(out))
`;

export interface Sample {
  family: string;
  type: string;
  name: string;
  labels: Record<string, string>;
  value: number;
}

export async function parsePrometheusText(text: string): Promise<Sample[]> {
  const { stdout, stderr, code } = await runToExit(["/usr/bin/python3", "-c", PARSER], { stdin: text });
  if (code !== 0) throw new Error(`the Prometheus parser refused the scrape: ${stderr}`);
  return JSON.parse(stdout);
}

/** The one sample called `name` whose labels include `labels`. */
export function sample(samples: Sample[], name: string, labels: Record<string, string> = {}): Sample | undefined {
  return samples.find(
    (s) => s.name === name && Object.entries(labels).every(([key, value]) => s.labels[key] === value),
  );
}
