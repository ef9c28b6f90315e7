/**
 * Counters, gauges and histograms with labels, written in Prometheus' text
 * exposition format (version 0.0.4): as much of a metrics library as
 * lib/metrics.ts uses, without one (prom-client cost about 16 MiB of a
 * process at import).
 *
 * @module
 */

export type Labels = Record<string, string | number>;

/** The content type of {@link Registry.text}. */
export const TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8";

interface Options<L extends string> {
  name: string;
  help: string;
  labelNames?: readonly L[];
  registers?: Registry[];
}

const escapeHelp = (s: string) => s.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
const escapeValue = (s: string) => s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");

/** A sample's value as the format writes it. */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

/** The metrics of one `/metrics` answer, in the order they were made. */
export class Registry {
  readonly #metrics: Metric<string>[] = [];
  readonly contentType = TEXT_FORMAT;

  add(m: Metric<string>): void {
    if (this.#metrics.some((x) => x.name === m.name)) throw new Error(`metric ${m.name} is registered twice`);
    this.#metrics.push(m);
  }

  /** The names of the metrics, in the order they were made. */
  names(): string[] {
    return this.#metrics.map((m) => m.name);
  }

  /** Every metric in the text format (each one's `collect` called first). */
  async metrics(): Promise<string> {
    const parts: string[] = [];
    for (const m of this.#metrics) {
      await m.collect();
      parts.push(m.lines().join("\n"));
    }
    return parts.join("\n\n") + "\n";
  }
}

abstract class Metric<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  /** Called before each write, to set what is read at scrape time. */
  protected collector: (() => void | Promise<void>) | undefined;
  protected abstract readonly type: string;

  constructor(o: Options<L>) {
    this.name = o.name;
    this.help = o.help;
    this.labelNames = o.labelNames ?? [];
    for (const r of o.registers ?? []) r.add(this);
  }

  /** Runs the `collect` it was made with, if any. */
  async collect(): Promise<void> {
    await this.collector?.();
  }

  /** The series key of `labels` (their values in the order of `labelNames`), checking the names. */
  protected key(labels: Partial<Record<L, string | number>> = {}): string {
    for (const k of Object.keys(labels)) {
      if (!this.labelNames.includes(k as L)) throw new Error(`metric ${this.name} has no label ${k}`);
    }
    return JSON.stringify(this.labelNames.map((n) => labels[n] === undefined ? null : String(labels[n])));
  }

  /** `{a="x",b="y"}` of a key, with `extra` last (a histogram's `le`). */
  protected labelText(key: string, extra?: [string, string]): string {
    const values = JSON.parse(key) as (string | null)[];
    const pairs = this.labelNames.flatMap((n, i) => values[i] === null ? [] : [`${n}="${escapeValue(values[i]!)}"`]);
    if (extra) pairs.push(`${extra[0]}="${escapeValue(extra[1])}"`);
    return pairs.length ? `{${pairs.join(",")}}` : "";
  }

  protected header(): string[] {
    return [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`];
  }

  abstract lines(): string[];
}

/** A value per label set, set or added to; one without labels starts at 0. */
class Scalar<L extends string> extends Metric<L> {
  protected readonly type: string = "gauge";
  protected readonly values = new Map<string, number>();

  protected add(labels: Partial<Record<L, string | number>> | number | undefined, n: number | undefined): void {
    const [l, v] = typeof labels === "number" ? [{}, labels] : [labels ?? {}, n ?? 1];
    const k = this.key(l);
    this.values.set(k, (this.values.get(k) ?? 0) + v);
  }

  lines(): string[] {
    const out = this.header();
    if (!this.values.size && !this.labelNames.length) out.push(`${this.name} 0`);
    for (const [k, v] of this.values) out.push(`${this.name}${this.labelText(k)} ${formatValue(v)}`);
    return out;
  }
}

export class Counter<L extends string = string> extends Scalar<L> {
  protected override readonly type = "counter";

  /** Adds `n` (default 1) to the series of `labels`. */
  inc(labels?: Partial<Record<L, string | number>> | number, n?: number): void {
    const v = typeof labels === "number" ? labels : n ?? 1;
    if (v < 0) throw new Error(`counter ${this.name} cannot go down`);
    this.add(labels, n);
  }
}

export class Gauge<L extends string = string> extends Scalar<L> {
  protected override readonly type = "gauge";

  /** `collect`, with the gauge as `this`, runs before each write: a value read at scrape time. */
  constructor(o: Options<L> & { collect?: (this: Gauge<L>) => void | Promise<void> }) {
    super(o);
    this.collector = o.collect?.bind(this);
  }

  set(labels: Partial<Record<L, string | number>> | number, v?: number): void {
    if (typeof labels === "number") this.values.set(this.key({}), labels);
    else this.values.set(this.key(labels), v ?? 0);
  }

  inc(labels?: Partial<Record<L, string | number>> | number, n?: number): void {
    this.add(labels, n);
  }

  /** Forgets every series. */
  reset(): void {
    this.values.clear();
  }
}

export class Histogram<L extends string = string> extends Metric<L> {
  protected readonly type = "histogram";
  readonly #bounds: readonly number[];
  readonly #series = new Map<string, { counts: number[]; sum: number; count: number }>();

  constructor(o: Options<L> & { buckets: readonly number[] }) {
    super(o);
    this.#bounds = [...o.buckets].sort((a, b) => a - b);
  }

  observe(labels: Partial<Record<L, string | number>> | number, v?: number): void {
    const [l, value] = typeof labels === "number" ? [{}, labels] : [labels, v ?? 0];
    const k = this.key(l);
    let s = this.#series.get(k);
    if (!s) this.#series.set(k, s = { counts: this.#bounds.map(() => 0), sum: 0, count: 0 });
    this.#bounds.forEach((b, i) => {
      if (value <= b) s.counts[i]!++;
    });
    s.sum += value;
    s.count++;
  }

  /** A timer: calling what it answers observes the seconds since, with `labels` and any given then. */
  startTimer(labels: Partial<Record<L, string | number>> = {}): (more?: Partial<Record<L, string | number>>) => number {
    const t0 = performance.now();
    return (more = {}) => {
      const seconds = (performance.now() - t0) / 1000;
      this.observe({ ...labels, ...more }, seconds);
      return seconds;
    };
  }

  lines(): string[] {
    const out = this.header();
    for (const [k, s] of this.#series) {
      this.#bounds.forEach((b, i) => {
        out.push(`${this.name}_bucket${this.labelText(k, ["le", formatValue(b)])} ${s.counts[i]}`);
      });
      out.push(`${this.name}_bucket${this.labelText(k, ["le", "+Inf"])} ${s.count}`);
      out.push(`${this.name}_sum${this.labelText(k)} ${formatValue(s.sum)}`);
      out.push(`${this.name}_count${this.labelText(k)} ${s.count}`);
    }
    return out;
  }
}
