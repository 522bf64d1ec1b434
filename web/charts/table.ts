import { h, replace } from "../lib/dom.ts";
import { formatCell } from "../lib/format.ts";
import { columnRoles, type QueryResult } from "../lib/result.ts";

const MAX_ROWS_SHOWN = 500;

/** A scrollable table with a sticky header; numbers right-aligned, timestamps formatted. */
export function renderTable(el: HTMLElement, result: QueryResult): void {
  if (result.columns.length === 0) {
    replace(el, h("div", { class: "chart-empty" }, "No columns"));
    return;
  }
  const roles = columnRoles(result);
  const numeric = new Set(roles.values);
  const rows = result.rows.slice(0, MAX_ROWS_SHOWN);
  replace(
    el,
    h(
      "div",
      { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Query result" },
      h(
        "table",
        { class: "data" },
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            result.columns.map((c, i) => h("th", { scope: "col", class: numeric.has(i) ? "num" : null, title: c.type }, c.name)),
          ),
        ),
        h(
          "tbody",
          null,
          rows.length === 0
            ? h("tr", null, h("td", { colspan: result.columns.length, class: "muted" }, "No rows"))
            : rows.map((r) =>
                h(
                  "tr",
                  null,
                  result.columns.map((_, i) => h("td", { class: numeric.has(i) ? "num" : null }, formatCell(r[i], roles.time === i))),
                ),
              ),
        ),
      ),
    ),
    result.rows.length > MAX_ROWS_SHOWN
      ? h("p", { class: "muted small" }, `Showing ${MAX_ROWS_SHOWN} of ${result.rows.length} rows.`)
      : null,
  );
}
