/**
 * The panel inspector (a modal dialog): its data as a table with a CSV download, and its query as run — the SQL,
 * the values bound to its macros and variables, the row count and the time it took.
 */
import { renderTable } from "../charts/table.ts";
import { toCsv } from "../lib/csv.ts";
import { h, replace } from "../lib/dom.ts";
import { formatDuration } from "../lib/format.ts";
import type { QueryResult } from "../lib/result.ts";

/** The query of a panel as it ran: from the frame when it carries it, else from the spec and the view. */
export interface QueryAsRun {
  sql: string;
  /** Named values bound to the statement's macros and variables, in order. */
  params: { name: string; value: string }[];
  rows: number;
  elapsedMs?: number;
  at: number;
}

export interface InspectInput {
  title: string;
  panelId: string;
  result: QueryResult | null;
  error?: string;
  query: QueryAsRun | null;
  tab: "data" | "query";
}

let dialog: HTMLDialogElement | null = null;

/** Opens the inspector for a panel on the given tab; Escape or Close returns focus to `returnFocus`. */
export function openInspector(input: InspectInput, returnFocus: HTMLElement | null): void {
  dialog?.remove();
  const d = h("dialog", { class: "inspector", "aria-labelledby": "inspector-title" }) as HTMLDialogElement;
  dialog = d;
  const dataTab = h("button", { type: "button", role: "tab", id: "inspect-tab-data", "aria-controls": "inspect-body" }, "Data");
  const queryTab = h("button", { type: "button", role: "tab", id: "inspect-tab-query", "aria-controls": "inspect-body" }, "Query");
  const body = h("div", { id: "inspect-body", role: "tabpanel", class: "inspector-body" });
  const show = (tab: "data" | "query") => {
    dataTab.setAttribute("aria-selected", String(tab === "data"));
    queryTab.setAttribute("aria-selected", String(tab === "query"));
    body.setAttribute("aria-labelledby", tab === "data" ? dataTab.id : queryTab.id);
    if (tab === "data") renderData(body, input);
    else renderQuery(body, input);
  };
  dataTab.addEventListener("click", () => show("data"));
  queryTab.addEventListener("click", () => show("query"));
  replace(
    d,
    h(
      "div",
      { class: "card-head" },
      h("h2", { id: "inspector-title" }, `Inspect: ${input.title}`),
      h("button", { type: "button", class: "link", onclick: () => d.close() }, "Close"),
    ),
    h("div", { role: "tablist", "aria-label": "Inspect", class: "tabs" }, dataTab, queryTab),
    body,
  );
  d.addEventListener("close", () => {
    d.remove();
    if (dialog === d) dialog = null;
    returnFocus?.focus();
  });
  document.body.append(d);
  show(input.tab);
  d.showModal();
}

function renderData(body: HTMLElement, input: InspectInput): void {
  if (!input.result) {
    replace(body, h("p", { class: "muted" }, input.error ? `No data: ${input.error}` : "No result yet."));
    return;
  }
  const result = input.result;
  const download = h(
    "button",
    {
      type: "button",
      class: "primary",
      id: "inspect-csv",
      onclick: () => {
        const url = URL.createObjectURL(new Blob([toCsv(result)], { type: "text/csv;charset=utf-8" }));
        const a = h("a", { href: url, download: `${input.panelId}.csv` });
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10_000);
      },
    },
    "Download CSV",
  );
  const table = h("div", { class: "inspect-table" });
  replace(body, h("div", { class: "row" }, download, h("span", { class: "muted small" }, `${result.rows.length} rows`)), table);
  renderTable(table, result);
}

function renderQuery(body: HTMLElement, input: InspectInput): void {
  const q = input.query;
  if (!q) {
    replace(body, h("p", { class: "muted" }, "This panel has not run yet."));
    return;
  }
  replace(
    body,
    h(
      "dl",
      { class: "facts" },
      h("dt", null, "Rows"),
      h("dd", { id: "inspect-rows" }, String(q.rows)),
      h("dt", null, "Time"),
      h("dd", null, q.elapsedMs !== undefined ? formatDuration(q.elapsedMs) : "–"),
      h("dt", null, "Ran at"),
      h("dd", null, new Date(q.at).toISOString()),
    ),
    h("h3", null, "SQL"),
    h("pre", { class: "sql", id: "inspect-sql" }, q.sql),
    h("h3", null, "Bound values"),
    q.params.length
      ? h(
          "table",
          { class: "table small" },
          h("thead", null, h("tr", null, h("th", { scope: "col" }, "Name"), h("th", { scope: "col" }, "Value"))),
          h(
            "tbody",
            null,
            q.params.map((p) => h("tr", null, h("td", null, h("code", null, p.name)), h("td", null, h("code", null, p.value)))),
          ),
        )
      : h("p", { class: "muted" }, "None."),
  );
}
