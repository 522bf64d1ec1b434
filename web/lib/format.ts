/**
 * Formatting shared by charts, tables and status lines. Pure and locale-aware through Intl, with
 * the locale and time zone injectable so tests are deterministic.
 */
export interface FormatOptions {
  locale?: string;
  timeZone?: string;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** An axis or table timestamp: the finer the span shown, the finer the label. */
export function formatTime(ms: number, spanMs: number, o: FormatOptions = {}): string {
  const opts: Intl.DateTimeFormatOptions = { timeZone: o.timeZone, hourCycle: "h23" };
  if (spanMs <= 10 * MINUTE) Object.assign(opts, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  else if (spanMs <= 2 * DAY) Object.assign(opts, { hour: "2-digit", minute: "2-digit" });
  else if (spanMs <= 60 * DAY) Object.assign(opts, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
  else Object.assign(opts, { year: "numeric", month: "short", day: "numeric" });
  return new Intl.DateTimeFormat(o.locale ?? "en-GB", opts).format(new Date(ms));
}

/** A full timestamp's parts as Intl writes them (en-CA: 2026-11-21, 23:05:09); the browser's zone and UTC are written to match. */
export const TIMESTAMP_PARTS: Readonly<Intl.DateTimeFormatOptions> = {
  year: "numeric",
  month: "2-digit",
  day: "2-digit",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
  hourCycle: "h23",
};

/** One formatter per zone: building an Intl.DateTimeFormat costs far more than formatting with one. */
const timestampFormats = new Map<string, Intl.DateTimeFormat>();

function timestampFormat(timeZone: string | undefined): Intl.DateTimeFormat {
  const key = timeZone ?? "";
  let f = timestampFormats.get(key);
  if (!f) {
    f = new Intl.DateTimeFormat("en-CA", { ...TIMESTAMP_PARTS, timeZone });
    timestampFormats.set(key, f);
  }
  return f;
}

const pad2 = (n: number) => (n < 10 ? `0${n}` : String(n));

/** A full timestamp for tooltips and table cells: 2026-11-21 14:05:09. */
export function formatTimestamp(ms: number, o: FormatOptions = {}): string {
  // The browser's zone and UTC from the Date itself: no Intl object, whose first use loads the locale data (about
  // 20 ms) in front of the first chart, which names its range with this. Other zones, and years Intl writes
  // differently (before 1000 or after 9999), go through Intl.
  if (o.timeZone === undefined || o.timeZone === "UTC") {
    const d = new Date(ms);
    const utc = o.timeZone === "UTC";
    const year = utc ? d.getUTCFullYear() : d.getFullYear();
    if (year >= 1000 && year <= 9999) {
      const [mo, day, hh, mi, ss] = utc
        ? [d.getUTCMonth(), d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()]
        : [d.getMonth(), d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds()];
      return `${year}-${pad2(mo + 1)}-${pad2(day)} ${pad2(hh)}:${pad2(mi)}:${pad2(ss)}`;
    }
  }
  const parts = timestampFormat(o.timeZone).formatToParts(new Date(ms));
  const p = (t: string) => parts.find((x) => x.type === t)?.value ?? "";
  return `${p("year")}-${p("month")}-${p("day")} ${p("hour")}:${p("minute")}:${p("second")}`;
}

/** "just now", "12 s ago", "3 min ago", "2 h ago", "4 d ago". */
export function formatAgo(thenMs: number, nowMs: number): string {
  const d = Math.max(0, nowMs - thenMs);
  if (d < 5 * SECOND) return "just now";
  if (d < MINUTE) return `${Math.floor(d / SECOND)} s ago`;
  if (d < HOUR) return `${Math.floor(d / MINUTE)} min ago`;
  if (d < DAY) return `${Math.floor(d / HOUR)} h ago`;
  return `${Math.floor(d / DAY)} d ago`;
}

/** A duration for people: 900 ms, 5 s, 1.5 min, 2 h. */
export function formatDuration(ms: number): string {
  if (ms < SECOND) return `${Math.round(ms)} ms`;
  if (ms < MINUTE) return `${trim(ms / SECOND)} s`;
  if (ms < HOUR) return `${trim(ms / MINUTE)} min`;
  if (ms < DAY) return `${trim(ms / HOUR)} h`;
  return `${trim(ms / DAY)} d`;
}

function trim(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(1).replace(/\.0$/, "");
}

const RELATIVE = /^now-(\d+)([smhdw])$/;
const UNIT_WORDS: Record<string, [string, string]> = {
  s: ["second", "seconds"],
  m: ["minute", "minutes"],
  h: ["hour", "hours"],
  d: ["day", "days"],
  w: ["week", "weeks"],
};

/** A dashboard's range in words: "Last 6 hours", "Last minute", or "from → to" for anything else. */
export function describeRange(time: { from: string; to: string }): string {
  const m = RELATIVE.exec(time.from);
  if (m && time.to === "now") {
    const n = Number(m[1]);
    const [one, many] = UNIT_WORDS[m[2]];
    return n === 1 ? `Last ${one}` : `Last ${n} ${many}`;
  }
  return `${time.from} → ${time.to}`;
}

const SI = [
  { v: 1e12, s: "T" },
  { v: 1e9, s: "G" },
  { v: 1e6, s: "M" },
  { v: 1e3, s: "k" },
];

/** A number in at most ~4 significant characters: 0.042, 12.5, 1,234, 12.3k, 4.5M. */
export function formatNumber(n: number): string {
  if (!Number.isFinite(n)) return "–";
  const a = Math.abs(n);
  if (a === 0) return "0";
  if (a >= 10_000) {
    const s = SI.find((x) => a >= x.v)!;
    const scaled = n / s.v;
    return `${Math.abs(scaled) >= 100 ? Math.round(scaled) : trimZeros(scaled.toFixed(1))}${s.s}`;
  }
  if (a >= 100) return grouped(Math.round(n));
  if (a >= 1) return trimZeros(n.toFixed(2));
  if (a >= 0.001) return trimZeros(n.toPrecision(2));
  return n.toExponential(1);
}

/**
 * An integer below 10,000 with en-US grouping (1,234), as toLocaleString("en-US") writes it, without Intl: the y axis
 * of the first chart formats with this, and the first Intl use loads the locale data (about 20 ms).
 */
function grouped(n: number): string {
  const digits = String(Math.abs(n));
  const text = digits.length > 3 ? `${digits.slice(0, -3)},${digits.slice(-3)}` : digits;
  return n < 0 ? `-${text}` : text;
}

function trimZeros(s: string): string {
  return s.includes(".") ? s.replace(/\.?0+$/, "") : s;
}

const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** A value with its panel unit: percentages and bytes get special care, other units follow the number. */
export function formatValue(n: number | null, unit?: string): string {
  if (n === null || !Number.isFinite(n)) return "–";
  const u = unit?.trim();
  if (!u) return formatNumber(n);
  if (u === "%") return `${formatNumber(n)}%`;
  if (u === "bytes" || u === "B") {
    let v = Math.abs(n);
    let i = 0;
    while (v >= 1024 && i < BYTE_UNITS.length - 1) {
      v /= 1024;
      i++;
    }
    return `${n < 0 ? "-" : ""}${i === 0 ? formatNumber(v) : trimZeros(v.toFixed(v >= 100 ? 0 : 1))} ${BYTE_UNITS[i]}`;
  }
  if (u === "ms" && Math.abs(n) >= 1000) return `${formatNumber(n / 1000)} s`;
  return `${formatNumber(n)} ${u}`;
}

/** An axis label: short units (%, ms, s, B) stay on the number, longer ones are left to the panel title. */
export function formatAxisValue(n: number, unit?: string): string {
  const u = unit?.trim();
  if (u && (u === "%" || u === "bytes" || u === "B" || u.length <= 2)) return formatValue(n, u);
  return formatNumber(n);
}

/** A table cell: timestamps as dates, numbers formatted, objects as JSON, null as an en dash. */
export function formatCell(v: unknown, isTime: boolean, o: FormatOptions = {}): string {
  if (v === null || v === undefined) return "–";
  if (isTime && typeof v === "number") return formatTimestamp(v, o);
  if (typeof v === "number") return Number.isInteger(v) ? v.toLocaleString("en-US") : formatNumber(v);
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}
