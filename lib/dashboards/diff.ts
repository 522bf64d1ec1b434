// A structural diff of two dashboard specs, for the history's "compare versions". Panels are matched by
// id and variables by name, so a reorder or an edit reads as what it is rather than as every later
// element changing. No browser or server dependency: the history route and the editor both use it.
// Written here rather than taken from a JSON-diff library because the keyed matching is the point and
// the whole algorithm is a page.

/** One difference: where (`path`, e.g. ["panels[cpu]", "sql"]), and the value before and after. */
export interface SpecChange {
  path: string[];
  kind: "added" | "removed" | "changed";
  before?: unknown;
  after?: unknown;
}

/** Arrays whose elements are matched by a key instead of by position. */
const KEYED: Record<string, string> = { panels: "id", variables: "name" };

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Deep equality of JSON values (key order ignored). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => jsonEqual(a[k], b[k]));
  }
  return false;
}

function keyOf(el: unknown, key: string): string | null {
  return isPlainObject(el) && typeof el[key] === "string" ? (el[key] as string) : null;
}

/** Every difference between `before` and `after`, in document order; [] when they are equal. */
export function diffSpecs(before: unknown, after: unknown): SpecChange[] {
  const out: SpecChange[] = [];
  walk(before, after, [], out, null);
  return out;
}

function walk(a: unknown, b: unknown, path: string[], out: SpecChange[], field: string | null): void {
  if (jsonEqual(a, b)) return;
  if (a === undefined) {
    out.push({ path, kind: "added", after: b });
    return;
  }
  if (b === undefined) {
    out.push({ path, kind: "removed", before: a });
    return;
  }
  const key = field !== null ? KEYED[field] : undefined;
  if (key && Array.isArray(a) && Array.isArray(b)) {
    const ka = a.map((el) => keyOf(el, key));
    const kb = b.map((el) => keyOf(el, key));
    if (ka.every((k) => k !== null) && kb.every((k) => k !== null) && new Set(ka).size === ka.length && new Set(kb).size === kb.length) {
      diffKeyed(a, b, ka as string[], kb as string[], field as string, path, out);
      return;
    }
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = [...Object.keys(a), ...Object.keys(b).filter((k) => !(k in a))];
    for (const k of keys) walk(a[k], b[k], [...path, k], out, k);
    return;
  }
  out.push({ path, kind: "changed", before: a, after: b });
}

function diffKeyed(a: unknown[], b: unknown[], ka: string[], kb: string[], field: string, path: string[], out: SpecChange[]): void {
  const parent = path.slice(0, -1);
  const label = (k: string) => [...parent, `${field}[${k}]`];
  const inB = new Map(kb.map((k, i) => [k, i]));
  const inA = new Map(ka.map((k, i) => [k, i]));
  ka.forEach((k, i) => {
    const j = inB.get(k);
    if (j === undefined) out.push({ path: label(k), kind: "removed", before: a[i] });
    else walk(a[i], b[j], label(k), out, null);
  });
  kb.forEach((k, j) => {
    if (!inA.has(k)) out.push({ path: label(k), kind: "added", after: b[j] });
  });
  const common = ka.filter((k) => inB.has(k));
  const commonB = kb.filter((k) => inA.has(k));
  if (common.some((k, i) => commonB[i] !== k)) {
    out.push({ path: [...path], kind: "changed", before: common, after: commonB });
  }
}
