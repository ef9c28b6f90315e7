/**
 * A small reader for the Prometheus text format: enough to take deltas of
 * counters and histograms from NICO's and the API server's /metrics.
 *
 * @module
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Every sample of a text exposition. */
export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = line.match(/^([a-zA-Z_:][\w:]*)(\{(.*)\})?\s+(\S+)/);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[3] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[4]) });
  }
  return out;
}

/** The sum of samples named `name` whose labels include `match`. */
export function sum(samples: Sample[], name: string, match: Record<string, string> = {}): number {
  let total = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (Object.entries(match).every(([k, v]) => s.labels[k] === v)) total += s.value;
  }
  return total;
}

/** `after - before` of {@link sum}. */
export function delta(before: Sample[], after: Sample[], name: string, match: Record<string, string> = {}): number {
  return sum(after, name, match) - sum(before, name, match);
}

/** A quantile from the delta of a histogram's cumulative buckets (upper bound of the bucket it falls in). */
export function histogramQuantile(before: Sample[], after: Sample[], name: string, q: number): number | undefined {
  const buckets = new Map<string, number>();
  for (const [list, sign] of [[after, 1], [before, -1]] as const) {
    for (const s of list) {
      if (s.name !== `${name}_bucket`) continue;
      buckets.set(s.labels.le!, (buckets.get(s.labels.le!) ?? 0) + sign * s.value);
    }
  }
  const sorted = [...buckets.entries()].map(([le, n]) => [le === "+Inf" ? Infinity : Number(le), n] as const)
    .sort((a, b) => a[0] - b[0]);
  const total = sorted.at(-1)?.[1] ?? 0;
  if (!total) return undefined;
  for (const [le, n] of sorted) if (n >= q * total) return le;
  return Infinity;
}
