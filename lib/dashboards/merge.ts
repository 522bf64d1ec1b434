// Three-way merge of dashboard specs, for a save that met someone else's save (409): `base` is the
// version the editor loaded, `theirs` the version now stored, `mine` the editor's spec. What only one
// side changed is taken from that side. Where both changed the same panel field differently, theirs
// stays in place and mine is added beside it as a copy, so neither side is lost; where both changed the
// same dashboard setting, mine wins and the conflict is reported with their value.
import { jsonEqual } from "./diff.ts";

type Spec = Record<string, unknown> & { panels: Array<Record<string, unknown> & { id: string }> };

/** A place both sides changed differently, and how the merge resolved it. */
export interface MergeConflict {
  path: string;
  resolution: "mine_kept_theirs_shown" | "both_kept";
  theirs?: unknown;
}

export interface MergeResult<S> {
  spec: S;
  conflicts: MergeConflict[];
}

function pick<T>(base: T, mine: T, theirs: T): { value: T; conflict: boolean } {
  if (jsonEqual(mine, base)) return { value: theirs, conflict: false };
  if (jsonEqual(theirs, base) || jsonEqual(mine, theirs)) return { value: mine, conflict: false };
  return { value: mine, conflict: true };
}

function freshId(id: string, taken: Set<string>): string {
  for (let n = 2; ; n++) {
    const candidate = `${id.slice(0, 56)}-mine${n === 2 ? "" : n}`;
    if (!taken.has(candidate)) return candidate;
  }
}

/** Merges `mine` and `theirs`, both edited from `base`. Panels by id, variables by name, other keys as values. */
export function mergeSpecs<S extends Spec>(base: S, mine: S, theirs: S): MergeResult<S> {
  const conflicts: MergeConflict[] = [];
  const out: Record<string, unknown> = {};
  const keys = new Set([...Object.keys(base), ...Object.keys(mine), ...Object.keys(theirs)]);
  for (const k of keys) {
    if (k === "panels") continue;
    if (k === "variables") {
      out.variables = mergeVariables(base.variables, mine.variables, theirs.variables, conflicts);
      if (out.variables === undefined) delete out.variables;
      continue;
    }
    const r = pick(base[k], mine[k], theirs[k]);
    if (r.conflict) conflicts.push({ path: k, resolution: "mine_kept_theirs_shown", theirs: theirs[k] });
    if (r.value !== undefined) out[k] = r.value;
  }
  out.panels = mergePanels(base.panels, mine.panels, theirs.panels, conflicts);
  return { spec: out as S, conflicts };
}

function mergePanels(base: Spec["panels"], mine: Spec["panels"], theirs: Spec["panels"], conflicts: MergeConflict[]): Spec["panels"] {
  const byId = (list: Spec["panels"]) => new Map(list.map((p) => [p.id, p]));
  const b = byId(base);
  const m = byId(mine);
  const t = byId(theirs);
  const taken = new Set([...m.keys(), ...t.keys()]);
  const out: Spec["panels"] = [];
  // The order of the side that reordered (theirs when both or neither did), then the other side's panels
  // that it lacks, each after the panel that precedes it there. Whether such a panel stays is decided below.
  const primary = sameOrder(base, theirs) ? mine : theirs;
  const secondary = primary === mine ? theirs : mine;
  const order = primary.map((p) => p.id);
  secondary.forEach((p, i) => {
    if (order.includes(p.id)) return;
    const prev = i > 0 ? order.indexOf(secondary[i - 1].id) : -1;
    order.splice(prev + 1, 0, p.id);
  });
  for (const id of order) {
    const bp = b.get(id);
    const mp = m.get(id);
    const tp = t.get(id);
    if (!bp) {
      // Added by one side, or by both under one id.
      if (mp && tp && !jsonEqual(mp, tp)) {
        out.push(tp, { ...mp, id: freshId(id, taken) });
        taken.add(out[out.length - 1].id);
        conflicts.push({ path: `panels[${id}]`, resolution: "both_kept" });
      } else out.push((tp ?? mp) as Spec["panels"][number]);
      continue;
    }
    if (!mp) {
      // I deleted it: it goes unless they changed it.
      if (tp && !jsonEqual(tp, bp)) out.push(tp);
      continue;
    }
    if (!tp) {
      if (!jsonEqual(mp, bp)) out.push(mp);
      continue;
    }
    const fields = new Set([...Object.keys(bp), ...Object.keys(mp), ...Object.keys(tp)]);
    const merged: Record<string, unknown> = {};
    let clash = false;
    for (const f of fields) {
      const r = pick(bp[f], mp[f], tp[f]);
      if (r.conflict) clash = true;
      if (r.value !== undefined) merged[f] = r.value;
    }
    if (clash) {
      const copy: Record<string, unknown> & { id: string } = { ...mp, id: freshId(id, taken) };
      taken.add(copy.id);
      if (typeof copy.title === "string") copy.title = `${copy.title} (mine)`.slice(0, 200);
      out.push(tp, copy);
      conflicts.push({ path: `panels[${id}]`, resolution: "both_kept" });
    } else out.push(merged as Spec["panels"][number]);
  }
  return out;
}

/** Do the panels both lists hold come in the same order? */
function sameOrder(a: Spec["panels"], b: Spec["panels"]): boolean {
  const inB = new Set(b.map((p) => p.id));
  const inA = new Set(a.map((p) => p.id));
  const x = a.filter((p) => inB.has(p.id)).map((p) => p.id);
  const y = b.filter((p) => inA.has(p.id)).map((p) => p.id);
  return x.every((id, i) => id === y[i]);
}

function mergeVariables(base: unknown, mine: unknown, theirs: unknown, conflicts: MergeConflict[]): unknown[] | undefined {
  const list = (v: unknown) => (Array.isArray(v) ? (v as Array<Record<string, unknown>>) : []);
  const b = new Map(list(base).map((v) => [String(v.name), v]));
  const m = new Map(list(mine).map((v) => [String(v.name), v]));
  const t = new Map(list(theirs).map((v) => [String(v.name), v]));
  const names = [...t.keys(), ...[...m.keys()].filter((n) => !t.has(n))];
  const out: unknown[] = [];
  for (const n of names) {
    const r = pick(b.get(n), m.get(n), t.get(n));
    if (r.conflict) conflicts.push({ path: `variables[${n}]`, resolution: "mine_kept_theirs_shown", theirs: t.get(n) });
    if (r.value !== undefined) out.push(r.value);
  }
  return out.length === 0 && mine === undefined && theirs === undefined ? undefined : out;
}
