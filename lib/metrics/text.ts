import { Histogram, Registry } from "prom-client";

/** prom-client's value formatting (NaN, ±Inf). */
function valueString(value: number): string {
  if (Number.isNaN(value)) return "Nan";
  if (!Number.isFinite(value)) return value < 0 ? "-Inf" : "+Inf";
  return String(value);
}

const NEEDS_ESCAPE = /[\\\n"]/;

function escapeLabelValue(value: unknown): string {
  const s = String(value);
  if (!NEEDS_ESCAPE.test(s)) return s;
  return s.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function escapeText(s: string): string {
  return s.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

/** Formatted `a="x",b="y"` of a label object; shared label objects live as long as their series, so they are cached. */
const formatted = new WeakMap<object, string>();

function labelText(labels: Record<string, unknown>, exclude?: Record<string, unknown>): string {
  let out = "";
  for (const name in labels) {
    if (exclude && Object.hasOwn(exclude, name)) continue;
    out += `${out ? "," : ""}${name}="${escapeLabelValue(labels[name])}"`;
  }
  return out;
}

function sharedText(labels: Record<string, unknown>): string {
  let s = formatted.get(labels);
  if (s === undefined) {
    s = labelText(labels);
    formatted.set(labels, s);
  }
  return s;
}

interface MetricValue {
  value: number;
  labels?: Record<string, unknown>;
  sharedLabels?: Record<string, unknown>;
  metricName?: string;
}

interface Renderable {
  getForPromString?: () => Promise<{ name: string; help: string; type: string; values?: MetricValue[] }>;
  get(): Promise<{ name: string; help: string; type: string; values?: MetricValue[] }>;
}

/** prom-client's per-series histogram state (stable across 15.x); checked before use. */
interface HistogramInternals {
  name: string;
  help: string;
  upperBounds: number[];
  hashMap: Record<string, { labels: Record<string, unknown>; bucketValues: Record<string, number>; sum: number; count: number }>;
  collect?: unknown;
}

function histogramInternals(metric: unknown): HistogramInternals | null {
  if (!(metric instanceof Histogram)) return null;
  const h = metric as unknown as HistogramInternals;
  if (h.collect || !Array.isArray(h.upperBounds) || typeof h.hashMap !== "object" || h.hashMap === null) return null;
  return h;
}

/** Per series (keyed by its label object, which lives as long as the series): every line up to the value. */
const histogramPrefixes = new WeakMap<object, { name: string; prefixes: string[] }>();

function prefixesOf(h: HistogramInternals, labels: Record<string, unknown>): string[] {
  const cached = histogramPrefixes.get(labels);
  if (cached && cached.name === h.name && cached.prefixes.length === h.upperBounds.length + 3) return cached.prefixes;
  const shared = labelText(labels);
  const sep = shared ? "," : "";
  const braces = shared ? `{${shared}}` : "";
  const prefixes = [
    ...h.upperBounds.map((b) => `${h.name}_bucket{le="${b}"${sep}${shared}} `),
    `${h.name}_bucket{le="+Inf"${sep}${shared}} `,
    `${h.name}_sum${braces} `,
    `${h.name}_count${braces} `,
  ];
  histogramPrefixes.set(labels, { name: h.name, prefixes });
  return prefixes;
}

/**
 * A histogram straight from its per-series state: the same lines prom-client writes, without the
 * ~17 intermediate objects per series, and with each series' line prefixes built once.
 */
function renderHistogram(h: HistogramInternals): string {
  const name = escapeText(h.name);
  const lines = [`# HELP ${name} ${escapeText(h.help)}`, `# TYPE ${name} histogram`];
  const n = h.upperBounds.length;
  for (const key in h.hashMap) {
    const series = h.hashMap[key];
    const prefixes = prefixesOf(h, series.labels);
    let acc = 0;
    for (let i = 0; i < n; i++) {
      acc += series.bucketValues[h.upperBounds[i]];
      lines.push(prefixes[i] + valueString(acc));
    }
    lines.push(prefixes[n] + valueString(series.count));
    lines.push(prefixes[n + 1] + valueString(series.sum));
    lines.push(prefixes[n + 2] + valueString(series.count));
  }
  return lines.join("\n");
}

async function renderMetric(metric: Renderable): Promise<string> {
  const histogram = histogramInternals(metric);
  if (histogram) return renderHistogram(histogram);
  const data = typeof metric.getForPromString === "function" ? await metric.getForPromString() : await metric.get();
  const name = escapeText(data.name);
  let out = `# HELP ${name} ${escapeText(data.help)}\n# TYPE ${name} ${data.type}`;
  for (const v of data.values ?? []) {
    const own = v.labels ? labelText(v.labels, v.sharedLabels) : "";
    const shared = v.sharedLabels ? sharedText(v.sharedLabels) : "";
    const inner = own && shared ? `${own},${shared}` : own || shared;
    out += `\n${v.metricName ?? name}${inner ? `{${inner}}` : ""} ${valueString(v.value)}`;
  }
  return out;
}

/**
 * The registry in the Prometheus text format, byte for byte what `registry.metrics()` writes, built
 * with less work per sample: a histogram with 500 dashboards is ~9,000 samples, and prom-client's
 * generic formatter spends most of a scrape re-formatting the same label sets. Reads in-memory
 * state only. Registries with default labels or the OpenMetrics format use prom-client's own path.
 */
export async function renderMetrics(registry: Registry): Promise<string> {
  const defaults = (registry as unknown as { _defaultLabels?: Record<string, unknown> })._defaultLabels;
  if (registry.contentType !== Registry.PROMETHEUS_CONTENT_TYPE || (defaults && Object.keys(defaults).length > 0)) {
    return registry.metrics();
  }
  const parts = await Promise.all(registry.getMetricsAsArray().map((m) => renderMetric(m as unknown as Renderable)));
  return `${parts.join("\n\n")}\n`;
}
