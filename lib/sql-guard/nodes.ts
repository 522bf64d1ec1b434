// Small readers of libpg-query's JSON parse tree nodes, shared by the guard's checks.

type Obj = Record<string, unknown>;

/** The string of a String node (an identifier part), or undefined. */
export function sval(node: unknown): string | undefined {
  const s = (node as { String?: { sval?: unknown } } | null)?.String?.sval;
  return typeof s === "string" ? s : undefined;
}

/** The string of a string literal node, or undefined. */
export function stringConst(node: unknown): string | undefined {
  const c = (node as { A_Const?: { sval?: { sval?: unknown }; isnull?: unknown } } | null)?.A_Const;
  if (!c?.sval) return undefined;
  const s = c.sval.sval ?? "";
  return typeof s === "string" ? s : undefined;
}

/** The value of an integer or numeric literal, unary minus included, or undefined. */
export function numberConst(node: unknown): number | undefined {
  const o = node as Obj | null;
  if (!o || typeof o !== "object") return undefined;
  const neg = (o.A_Expr as Obj | undefined) ?? undefined;
  if (neg && neg.kind === "AEXPR_OP" && neg.lexpr === undefined) {
    const name = neg.name as { String?: { sval?: unknown } }[] | undefined;
    if (Array.isArray(name) && name.length === 1 && name[0]?.String?.sval === "-") {
      const v = numberConst(neg.rexpr);
      return v === undefined ? undefined : -v;
    }
    return undefined;
  }
  const c = o.A_Const as { ival?: { ival?: unknown }; fval?: { fval?: unknown } } | undefined;
  if (!c) return undefined;
  if (c.ival) {
    const v = c.ival.ival ?? 0;
    return typeof v === "number" ? v : undefined;
  }
  if (c.fval && typeof c.fval.fval === "string") {
    const v = Number(c.fval.fval);
    return Number.isFinite(v) ? v : undefined;
  }
  return undefined;
}
