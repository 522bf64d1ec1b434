/**
 * The variables bar: one control per dashboard variable. A single-value variable is a select; a multi-value one a
 * dropdown of checkboxes; "All" (when the variable allows it) is Grafana's `$__all`. Options come from the spec
 * (custom) or from the server (query variables: GET /api/dashboards/{id}/variables/{name}/options).
 */
import type { VariableSummary } from "../../lib/live/frames.ts";
import { api } from "../lib/api.ts";
import { h, replace } from "../lib/dom.ts";
import { ALL } from "../lib/view-url.ts";

/** The options of a variable: the spec's values, or the server's list for a query variable. */
export async function variableOptions(dashboardId: string, v: VariableSummary): Promise<string[]> {
  if (v.type === "custom") return v.values ?? [];
  const body = await api<unknown>(
    "GET",
    `/api/dashboards/${encodeURIComponent(dashboardId)}/variables/${encodeURIComponent(v.name)}/options`,
  );
  const list = Array.isArray(body)
    ? body
    : ((body as { options?: unknown; values?: unknown }).options ?? (body as { values?: unknown }).values);
  return Array.isArray(list) ? list.map((x) => (typeof x === "object" && x && "value" in x ? String(x.value) : String(x))) : [];
}

/** The selection in effect: the URL's, else the default, else All (when allowed) or the first option. */
export function selection(v: VariableSummary, fromUrl: string[] | undefined, options: readonly string[]): string[] {
  if (fromUrl?.length) return v.multi ? fromUrl : fromUrl.slice(0, 1);
  if (v.default !== undefined) return Array.isArray(v.default) ? v.default : [v.default];
  if (v.includeAll) return [ALL];
  return options.length ? [options[0]!] : [];
}

export interface VariablesBarDeps {
  dashboardId: string;
  /** The values in the URL (var-NAME). */
  current(): Record<string, string[]>;
  change(name: string, values: string[]): void;
  onError(text: string): void;
}

/** Mounts the bar; render(variables) draws it for the spec's variables (hidden when there are none). */
export function mountVariablesBar(host: HTMLElement, deps: VariablesBarDeps): (variables: readonly VariableSummary[]) => Promise<void> {
  const cache = new Map<string, string[]>();
  return async function render(variables) {
    host.hidden = variables.length === 0;
    if (variables.length === 0) {
      replace(host);
      return;
    }
    const controls = await Promise.all(
      variables.map(async (v) => {
        let options = cache.get(v.name);
        if (!options) {
          try {
            options = await variableOptions(deps.dashboardId, v);
            cache.set(v.name, options);
          } catch (err) {
            deps.onError(`The options of $${v.name} could not be loaded: ${err instanceof Error ? err.message : String(err)}`);
            options = [];
          }
        }
        const chosen = selection(v, deps.current()[v.name], options);
        return v.multi ? multiControl(v, options, chosen, deps) : singleControl(v, options, chosen, deps);
      }),
    );
    replace(host, controls);
  };
}

function labelOf(v: VariableSummary): string {
  return v.label ?? v.name;
}

function singleControl(v: VariableSummary, options: readonly string[], chosen: string[], deps: VariablesBarDeps): HTMLElement {
  const id = `var-${v.name}`;
  const select = h(
    "select",
    { id, name: id },
    v.includeAll ? h("option", { value: ALL, selected: chosen[0] === ALL }, "All") : null,
    options.map((o) => h("option", { value: o, selected: chosen[0] === o }, o)),
  );
  select.addEventListener("change", () => deps.change(v.name, [select.value]));
  return h("div", { class: "variable" }, h("label", { for: id }, labelOf(v)), select);
}

function multiControl(v: VariableSummary, options: readonly string[], chosen: string[], deps: VariablesBarDeps): HTMLElement {
  const all = chosen.includes(ALL);
  const summaryText = all ? "All" : chosen.length === 0 ? "None" : chosen.length <= 2 ? chosen.join(", ") : `${chosen.length} selected`;
  const boxes: HTMLInputElement[] = [];
  const box = (value: string, text: string, checked: boolean) => {
    const input = h("input", { type: "checkbox", value, checked });
    boxes.push(input);
    return h("li", null, h("label", null, input, ` ${text}`));
  };
  const list = h(
    "ul",
    { class: "variable-options" },
    v.includeAll ? box(ALL, "All", all) : null,
    options.map((o) => box(o, o, !all && chosen.includes(o))),
  );
  list.addEventListener("change", (ev) => {
    const target = ev.target as HTMLInputElement;
    let values: string[];
    if (target.value === ALL) values = target.checked ? [ALL] : [];
    else values = boxes.filter((b) => b.checked && b.value !== ALL).map((b) => b.value);
    if (values.length === 0 && v.includeAll) values = [ALL];
    deps.change(v.name, values);
  });
  return h(
    "details",
    { class: "variable multi" },
    h(
      "summary",
      { "aria-label": `${labelOf(v)}: ${summaryText}. Choose values` },
      h("span", { class: "variable-name" }, labelOf(v)),
      ` ${summaryText}`,
    ),
    list,
  );
}
