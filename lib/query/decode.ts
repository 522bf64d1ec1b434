/**
 * Text-format value decoding (docs/query-runner.md), per query (never pg's global type parsers): timestamps as
 * epoch milliseconds, int8/numeric as numbers when they survive a round trip, else strings. The same pass
 * computes each row's serialized JSON size, so the byte cap costs no second walk over the data.
 */

/** A cell of a query result: what JSON.stringify will write. */
export type Cell = string | number | boolean | null | object;

const Kind = { Text: 0, Bool: 1, Int: 2, Float: 3, BigNum: 4, Time: 5, Json: 6 } as const;
type Kind = (typeof Kind)[keyof typeof Kind];

/** Built-in type names by OID (pg_type.typname); other types are reported as "unknown". */
const TYPE_NAMES: Record<number, string> = {
  16: "bool",
  17: "bytea",
  18: "char",
  19: "name",
  20: "int8",
  21: "int2",
  23: "int4",
  25: "text",
  26: "oid",
  114: "json",
  142: "xml",
  650: "cidr",
  700: "float4",
  701: "float8",
  705: "unknown",
  774: "macaddr8",
  790: "money",
  829: "macaddr",
  869: "inet",
  1000: "_bool",
  1005: "_int2",
  1007: "_int4",
  1009: "_text",
  1015: "_varchar",
  1016: "_int8",
  1021: "_float4",
  1022: "_float8",
  1042: "bpchar",
  1043: "varchar",
  1082: "date",
  1083: "time",
  1114: "timestamp",
  1115: "_timestamp",
  1182: "_date",
  1184: "timestamptz",
  1185: "_timestamptz",
  1186: "interval",
  1231: "_numeric",
  1266: "timetz",
  1560: "bit",
  1562: "varbit",
  1700: "numeric",
  2249: "record",
  2950: "uuid",
  2951: "_uuid",
  3614: "tsvector",
  3802: "jsonb",
  3807: "_jsonb",
};

function kindOf(oid: number): Kind {
  switch (oid) {
    case 16:
      return Kind.Bool;
    case 21:
    case 23:
    case 26:
      return Kind.Int;
    case 700:
    case 701:
      return Kind.Float;
    case 20:
    case 1700:
      return Kind.BigNum;
    case 1082:
    case 1114:
    case 1184:
      return Kind.Time;
    case 114:
    case 3802:
      return Kind.Json;
    default:
      return Kind.Text;
  }
}

/** The type name shown in a result's `columns` for a type OID. */
export function typeName(oid: number): string {
  return TYPE_NAMES[oid] ?? "unknown";
}

/** JSON.stringify escapes these; everything else is written as is. */
const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;

/** Serialized size of a string cell: quotes, escapes and UTF-8 bytes are accounted by the caller's wire length. */
function escapeExtra(s: string): number {
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s).length - s.length - 2 : 0;
}

/** Epoch milliseconds of an ISO-style (DateStyle ISO) date, timestamp or timestamptz; NaN when it is not one. */
export function parseTimestamp(s: string): number {
  const n = s.length;
  // Fast path: YYYY-MM-DD[ HH:MM:SS[.ffffff]][±HH[:MM[:SS]]] with a four-digit year (the only shape a modern metric has).
  if (n >= 10 && s.charCodeAt(4) === 45 && s.charCodeAt(7) === 45) {
    const y = digits(s, 0, 4);
    const mo = digits(s, 5, 2);
    const d = digits(s, 8, 2);
    if (y >= 100 && mo >= 1 && d >= 1) {
      if (n === 10) return Date.UTC(y, mo - 1, d);
      if (n >= 19 && s.charCodeAt(10) === 32 && s.charCodeAt(13) === 58 && s.charCodeAt(16) === 58) {
        const h = digits(s, 11, 2);
        const mi = digits(s, 14, 2);
        const sec = digits(s, 17, 2);
        let i = 19;
        let frac = 0;
        if (i < n && s.charCodeAt(i) === 46) {
          let scale = 100;
          i++;
          while (i < n) {
            const c = s.charCodeAt(i) - 48;
            if (c < 0 || c > 9) break;
            frac += c * scale;
            scale /= 10;
            i++;
          }
        }
        let offsetMs = 0;
        if (i < n) {
          const sign = s.charCodeAt(i);
          if ((sign !== 43 && sign !== 45) || n - i < 3) return Number.NaN;
          const oh = digits(s, i + 1, 2);
          const om = n - i >= 6 && s.charCodeAt(i + 3) === 58 ? digits(s, i + 4, 2) : 0;
          const os = n - i >= 9 && s.charCodeAt(i + 6) === 58 ? digits(s, i + 7, 2) : 0;
          const end = i + 3 + (om || n - i >= 6 ? 3 : 0) + (os || n - i >= 9 ? 3 : 0);
          if (end !== n || Number.isNaN(oh + om + os)) return Number.NaN;
          offsetMs = (sign === 45 ? -1 : 1) * ((oh * 60 + om) * 60 + os) * 1000;
        }
        const ms = Date.UTC(y, mo - 1, d, h, mi, sec) + Math.round(frac * 1000) / 1000;
        return ms - offsetMs;
      }
    }
  }
  return slowTimestamp(s);
}

function digits(s: string, start: number, len: number): number {
  let v = 0;
  for (let i = start; i < start + len; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return Number.NaN;
    v = v * 10 + c;
  }
  return v;
}

const SLOW = /^(\d{1,})-(\d\d)-(\d\d)(?: (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?)?(?:([+-])(\d\d)(?::(\d\d)(?::(\d\d))?)?)?( BC)?$/;

/** Years below 100 or above 9999 and BC dates: rare, so a regex and setUTCFullYear are fine. */
function slowTimestamp(s: string): number {
  const m = SLOW.exec(s);
  if (!m) return Number.NaN;
  let year = Number(m[1]);
  if (m[12]) year = 1 - year;
  const date = new Date(0);
  date.setUTCFullYear(year, Number(m[2]) - 1, Number(m[3]));
  date.setUTCHours(Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0), 0);
  const frac = m[7] ? Number(`0.${m[7]}`) * 1000 : 0;
  const offset = m[8] ? (m[8] === "-" ? -1 : 1) * ((Number(m[9]) * 60 + Number(m[10] ?? 0)) * 60 + Number(m[11] ?? 0)) : 0;
  return date.getTime() + frac - offset * 1000;
}

/**
 * int8/numeric text → a number when it survives a round trip (at most 15 significant digits, or a safe
 * integer), else the exact text as a string. NaN and ±Infinity stay strings (JSON has no such numbers).
 */
export function parseBigNumeric(s: string): number | string {
  const n = s.length;
  let i = s.charCodeAt(0) === 45 ? 1 : 0;
  if (n - i <= 15) {
    const v = Number(s);
    return Number.isFinite(v) ? v : s;
  }
  // Count significant digits: from the first non-zero digit to the last non-zero digit.
  let first = -1;
  let last = -1;
  let sig = 0;
  let dot = -1;
  for (; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      dot = i;
      continue;
    }
    if (c < 48 || c > 57) return s;
    if (c !== 48) {
      if (first === -1) first = i;
      last = i;
    }
  }
  if (first === -1) return 0;
  sig = last - first + 1 - (dot > first && dot < last ? 1 : 0);
  const v = Number(s);
  if (!Number.isFinite(v)) return s;
  if (sig <= 15) return v;
  return Number.isSafeInteger(v) && dot === -1 ? v : s;
}

/** Decodes the rows of one result; built once per RowDescription. */
export interface RowDecoder {
  columns: { name: string; type: string }[];
  /** Serialized size of `{"columns":[...]}`'s entries, counted once. */
  headerBytes: number;
  /**
   * Decodes `fields` into `out` and returns the row's JSON size (brackets, commas and the separator
   * before the next row included). `wireBytes` is the DataRow message length.
   */
  decode(fields: (string | null)[], wireBytes: number, out: Cell[]): number;
}

/** Builds a decoder for columns described by name and type OID. */
export function createRowDecoder(fields: readonly { name: string; dataTypeID: number }[]): RowDecoder {
  const kinds = fields.map((f) => kindOf(f.dataTypeID));
  const columns = fields.map((f) => ({ name: f.name, type: typeName(f.dataTypeID) }));
  const count = kinds.length;
  // DataRow: int32 length + int16 field count + per field an int32 length, then the UTF-8 bytes.
  const frame = 4 + 2 + 4 * count;
  // {"name":"…","type":"…"} per column, commas and brackets: what JSON.stringify(columns) writes.
  let headerBytes = 2 + Math.max(0, count - 1);
  for (const c of columns) headerBytes += 21 + Buffer.byteLength(c.name) + escapeExtra(c.name) + c.type.length;
  return {
    columns,
    headerBytes,
    decode(values, wireBytes, out) {
      // UTF-8 bytes of every value together; the per-kind terms below replace the text length by the JSON one.
      let size = wireBytes - frame + count + 2; // commas between cells (+1 spare) and the row's brackets
      for (let i = 0; i < count; i++) {
        const v = values[i] as string | null;
        if (v === null) {
          out[i] = null;
          size += 4;
          continue;
        }
        switch (kinds[i]) {
          case Kind.Int:
            out[i] = Number(v);
            break;
          case Kind.Float: {
            const f = Number(v);
            if (Number.isFinite(f)) out[i] = f;
            else {
              out[i] = v;
              size += 2;
            }
            break;
          }
          case Kind.BigNum: {
            const b = parseBigNumeric(v);
            out[i] = b;
            if (typeof b === "string") size += 2;
            else if (b === 0 && v.length > 1) size += 1 - v.length;
            break;
          }
          case Kind.Bool:
            out[i] = v === "t";
            size += v === "t" ? 3 : 4;
            break;
          case Kind.Time: {
            const ms = parseTimestamp(v);
            if (Number.isNaN(ms)) {
              out[i] = v; // infinity, -infinity
              size += 2 + escapeExtra(v);
            } else {
              out[i] = ms;
              // Whole milliseconds between 2001 and 2286 print as 13 digits; only other instants pay for a conversion.
              size += (Number.isInteger(ms) && ms >= 1e12 && ms < 1e13 ? 13 : String(ms).length) - v.length;
            }
            break;
          }
          case Kind.Json:
            // Re-serialized JSON is never longer than PostgreSQL's text (jsonb adds spaces after : and ,).
            out[i] = JSON.parse(v) as Cell;
            break;
          default:
            out[i] = v;
            size += 2 + escapeExtra(v);
        }
      }
      return size;
    },
  };
}
