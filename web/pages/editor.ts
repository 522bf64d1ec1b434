import type { DashboardSpec, Panel, Variable } from "../../lib/dashboards/spec.ts";
import { diffSpecs, jsonEqual, type SpecChange } from "../../lib/dashboards/diff.ts";
import { mergeSpecs } from "../../lib/dashboards/merge.ts";
import { type PanelType, renderResult } from "../charts/index.ts";
import { type GridPos, place, step, withPositions } from "../editor/layout.ts";
import { oversizedSql } from "../editor/save-checks.ts";
import { createSaveWarnings, savedWarningsText, warningsOf } from "../editor/save-warnings.ts";
import { createSession } from "../editor/session.ts";
import { type Catalog, createSqlEditor, type SqlEditor, type SqlVerdict } from "../editor/sql-editor.ts";
import { ApiError, api, errorText, listOf, type Me, type Source } from "../lib/api.ts";
import { byId, h, notify, replace, stateBox } from "../lib/dom.ts";
import type { QueryResult } from "../lib/result.ts";
import { saveProblemLists } from "../lib/save-problem.ts";

interface Dashboard {
  id: string;
  workspaceId: string;
  version: number;
  spec: DashboardSpec;
}

const TYPES: PanelType[] = ["timeseries", "bar", "stat", "gauge", "table"];
const ROW_PX = 30;
const DRAFT_PREFIX = "pulseboard.draft.";

/**
 * The dashboard editor: panels (add, duplicate, remove, reorder, a form each, SQL on CodeMirror with the
 * guard's verdict as you type, a preview with the panel's own chart), layout on the 24-column grid by drag
 * and keyboard, settings and variables, the JSON view kept in sync both ways, undo/redo, history (diff and
 * restore), and a save that never loses either side of a 409. A save that fails keeps the draft in
 * localStorage until one succeeds.
 */
export function bootEditor(): void {
  const body = document.body.dataset;
  const routeId = body.dashboardId ?? "new";
  const isNew = routeId === "new";
  const maxPoints = Number(body.maxWindowPoints) || 720;
  const message = byId("message");
  const saveBtn = byId<HTMLButtonElement>("save");
  const undoBtn = byId<HTMLButtonElement>("undo");
  const redoBtn = byId<HTMLButtonElement>("redo");
  const layoutEl = byId("layout");
  const formEl = byId("panel-form");
  /** The points warnings of the last save, shown next to the panels they name until dismissed. */
  const saveWarnings = createSaveWarnings();
  const settingsEl = byId("pane-settings");
  const specEl = byId<HTMLTextAreaElement>("spec");
  const specState = byId("spec-state");
  const editorEl = byId("editor");

  let dash: Dashboard | null = null;
  let workspaceId = new URLSearchParams(location.search).get("workspace") ?? "";
  let saved: DashboardSpec | null = null;
  let sources: Source[] = [];
  let selected: string | null = null;
  let sqlEditor: SqlEditor | null = null;
  let formFor: string | null = null;
  /** The variable values the preview binds (the editor's stand-in for a viewer's var-NAME), by name. */
  const previewValues = new Map<string, string[]>();
  const fresh: DashboardSpec = {
    title: "Untitled dashboard",
    time: { from: body.defaultFrom || "now-24h", to: body.defaultTo || "now" },
    panels: [],
  };
  const session = createSession<DashboardSpec>(fresh);
  const draftKey = () => `${DRAFT_PREFIX}${dash?.id ?? `new:${workspaceId}`}`;

  const spec = () => session.spec;
  const change = (mutate: (s: DashboardSpec) => void, coalesce?: string) => {
    const next = structuredClone(session.spec);
    mutate(next);
    session.apply(next, coalesce);
  };
  const panel = (id: string | null) => spec().panels.find((p) => p.id === id);

  session.onChange(() => {
    renderLayout();
    if (formFor !== selected || !panel(selected)) renderForm();
    else syncForm();
    renderJson();
    undoBtn.disabled = !session.canUndo();
    redoBtn.disabled = !session.canRedo();
    const dirty = !saved || !jsonEqual(saved, spec());
    saveBtn.disabled = !dirty && !isNew;
    byId("title").textContent = `Edit: ${spec().title}`;
    if (dirty) keepDraft();
  });

  // The draft survives a reload in localStorage; a draft over the browser's quota (a pasted dump) cannot, and the
  // person is told so rather than losing it silently on the next reload.
  let draftTooLarge = false;
  function keepDraft(): void {
    const text = JSON.stringify({ base: dash?.version ?? null, spec: spec() });
    try {
      localStorage.setItem(draftKey(), text);
      draftTooLarge = false;
    } catch {
      if (!draftTooLarge) {
        notify(
          message,
          `This draft (${Math.ceil(text.length / 1024).toLocaleString("en-US")} KB) is too large to keep in this browser: it is lost on reload unless saved.`,
          "error",
        );
      }
      draftTooLarge = true;
    }
  }

  window.addEventListener("beforeunload", (e) => {
    if (saved && !jsonEqual(saved, spec())) e.preventDefault();
  });

  // --- Load -------------------------------------------------------------------------------------
  void (async () => {
    try {
      if (!isNew) {
        dash = await api<Dashboard>("GET", `/api/dashboards/${encodeURIComponent(routeId)}`);
        workspaceId = dash.workspaceId;
      }
      const me = await api<Me>("GET", "/api/me");
      const role = me.workspaces?.find((w) => w.id === workspaceId)?.role;
      sources = listOf<Source>(await api<unknown>("GET", `/api/workspaces/${encodeURIComponent(workspaceId)}/sources`), "sources");
      // The list leaves catalogs out; each source's own read carries it (for completion).
      sources = await Promise.all(sources.map((s) => api<Source>("GET", `/api/sources/${encodeURIComponent(s.id)}`).catch(() => s)));
      editorEl.removeAttribute("aria-busy");
      editorEl.nextElementSibling?.classList.contains("loading") && editorEl.nextElementSibling.remove();
      document.querySelector(".state.loading")?.remove();
      if (role === "viewer")
        notify(message, "You have the viewer role in this workspace: you can read this dashboard but not save changes.", "info");
      const start = dash?.spec ?? fresh;
      saved = isNew ? null : structuredClone(start);
      byId("version").textContent = dash ? `version ${dash.version}` : "not saved yet";
      session.reset(start);
      offerDraft();
    } catch (err) {
      document.querySelector(".state.loading")?.remove();
      replace(editorEl, stateBox("error", errorText(err), h("a", { href: "/", class: "button" }, "All dashboards")));
    }
  })();

  function offerDraft(): void {
    const raw = localStorage.getItem(draftKey());
    if (!raw) return;
    try {
      const draft = JSON.parse(raw) as { spec: DashboardSpec };
      if (jsonEqual(draft.spec, spec())) {
        localStorage.removeItem(draftKey());
        return;
      }
      replace(
        message,
        "You have unsaved changes from an earlier visit. ",
        h(
          "button",
          {
            type: "button",
            class: "link",
            onclick: () => {
              session.apply(draft.spec);
              notify(message, "Draft restored (not saved yet).", "info");
            },
          },
          "Restore them",
        ),
        " ",
        h(
          "button",
          {
            type: "button",
            class: "link",
            onclick: () => {
              localStorage.removeItem(draftKey());
              notify(message, null);
            },
          },
          "Discard",
        ),
      );
      message.hidden = false;
      message.className = "notice info";
    } catch {
      localStorage.removeItem(draftKey());
    }
  }

  // --- Tabs -------------------------------------------------------------------------------------
  for (const name of ["panels", "settings", "json"]) {
    byId(`tab-${name}`).addEventListener("click", () => {
      for (const other of ["panels", "settings", "json"]) {
        byId(`tab-${other}`).setAttribute("aria-selected", String(other === name));
        byId(`pane-${other}`).hidden = other !== name;
      }
      if (name === "settings") renderSettings();
      if (name === "json") renderJson();
      // Variables may have changed in Settings: the preview's value pickers follow.
      const slot = document.getElementById("preview-vars-slot");
      if (name === "panels" && slot) replace(slot, previewVariables());
    });
  }

  // --- Layout -----------------------------------------------------------------------------------
  function freshId(): string {
    const taken = new Set(spec().panels.map((p) => p.id));
    for (let n = spec().panels.length + 1; ; n++) if (!taken.has(`panel-${n}`)) return `panel-${n}`;
  }

  byId("add-panel").addEventListener("click", () => {
    const id = freshId();
    const bottom = withPositions(spec().panels).reduce((m, p) => Math.max(m, p.gridPos.y + p.gridPos.h), 0);
    change((s) => {
      s.panels.push({
        id,
        title: "New panel",
        type: "timeseries",
        sourceId: sources[0]?.id ?? "",
        sql: "SELECT $__timeGroup(ts, $__interval) AS time, count(*) AS n\nFROM my_table\nWHERE $__timeFilter(ts)\nGROUP BY 1\nORDER BY 1",
        gridPos: { x: 0, y: bottom, w: 12, h: 8 },
      });
    });
    select(id);
  });

  function select(id: string | null): void {
    selected = id;
    renderLayout();
    renderForm();
  }

  function setPos(id: string, pos: GridPos, coalesce?: string): void {
    const placed = place(spec().panels, id, pos);
    change((s) => {
      s.panels = placed;
    }, coalesce);
  }

  /** What the layout view shows; a change elsewhere (SQL typed, a unit) leaves it as it is. */
  let layoutShown = "";
  function renderLayout(): void {
    const placed = withPositions(spec().panels);
    const shown = JSON.stringify([selected, placed.map((p) => [p.id, p.title, p.type, p.gridPos, saveWarnings.of(p.id)?.message])]);
    if (shown === layoutShown && layoutEl.isConnected) return;
    layoutShown = shown;
    replace(
      layoutEl,
      placed.length === 0 ? stateBox("empty", "No panels yet: add one.") : null,
      placed.map((p) => {
        const card = h(
          "div",
          {
            class: `layout-card${p.id === selected ? " selected" : ""}`,
            tabindex: 0,
            "data-panel-id": p.id,
            role: "button",
            "aria-label": `${p.title}: column ${p.gridPos.x + 1}, row ${p.gridPos.y + 1}, ${p.gridPos.w} wide, ${p.gridPos.h} high`,
          },
          h("div", { class: "layout-handle" }, p.title, h("span", { class: "muted small" }, ` ${p.type}`)),
          saveWarnings.of(p.id)
            ? h("p", { class: "layout-warning small", "data-warning-for": p.id }, `⚠ ${saveWarnings.of(p.id)!.message}`)
            : null,
          h("div", { class: "layout-resize", "aria-hidden": "true" }),
        );
        card.style.gridColumn = `${p.gridPos.x + 1} / span ${p.gridPos.w}`;
        card.style.gridRow = `${p.gridPos.y + 1} / span ${p.gridPos.h}`;
        card.addEventListener("click", () => selected !== p.id && select(p.id));
        card.addEventListener("keydown", (e) => {
          const next = step(p.gridPos, e.key, e.shiftKey);
          if (!next) return;
          e.preventDefault();
          setPos(p.id, next);
          (layoutEl.querySelector(`[data-panel-id="${CSS.escape(p.id)}"]`) as HTMLElement | null)?.focus();
        });
        drag(card.querySelector(".layout-handle") as HTMLElement, p.id, p.gridPos, false);
        drag(card.querySelector(".layout-resize") as HTMLElement, p.id, p.gridPos, true);
        return card;
      }),
    );
  }

  /**
   * Pointer drag on a handle: whole cells of the grid, one undo step per gesture. The gesture listens on the
   * window, not the handle: every step re-renders the layout, which replaces the handle under the pointer.
   */
  function drag(handle: HTMLElement, id: string, start: GridPos, resize: boolean): void {
    handle.addEventListener("pointerdown", (e) => {
      e.preventDefault();
      const cell = layoutEl.clientWidth / 24;
      const x0 = e.clientX;
      const y0 = e.clientY;
      const gesture = `drag:${id}:${e.timeStamp}`;
      let last = "";
      const move = (ev: PointerEvent) => {
        const dx = Math.round((ev.clientX - x0) / cell);
        const dy = Math.round((ev.clientY - y0) / ROW_PX);
        const pos = resize ? { ...start, w: start.w + dx, h: start.h + dy } : { ...start, x: start.x + dx, y: start.y + dy };
        const key = JSON.stringify(pos);
        if (key === last) return;
        last = key;
        setPos(id, pos, gesture);
      };
      const up = () => {
        window.removeEventListener("pointermove", move);
        window.removeEventListener("pointerup", up);
        window.removeEventListener("pointercancel", up);
      };
      window.addEventListener("pointermove", move);
      window.addEventListener("pointerup", up);
      window.addEventListener("pointercancel", up);
    });
  }

  // --- Panel form -------------------------------------------------------------------------------
  function field(label: string, input: HTMLElement): HTMLElement {
    return h("label", { class: "field" }, label, input);
  }

  function renderForm(): void {
    formFor = selected;
    const p = panel(selected);
    sqlEditor?.view.destroy();
    sqlEditor = null;
    if (!p) {
      replace(formEl, h("p", { class: "muted" }, "Select a panel to edit it."));
      return;
    }
    const id = p.id;
    const upd = (key: string, mutate: (q: Panel) => void) =>
      change((s) => {
        const q = s.panels.find((x) => x.id === id);
        if (q) mutate(q);
      }, `${id}:${key}`);
    const input = (name: string, value: string, onInput: (v: string) => void, attrs: Record<string, string> = {}) => {
      const el = h("input", { name, value, ...attrs });
      el.addEventListener("input", () => onInput(el.value));
      return el;
    };
    const num = (v: string) => (v.trim() === "" || Number.isNaN(Number(v)) ? undefined : Number(v));
    const opt = (q: Panel, key: "decimals" | "min" | "max", v: number | undefined) => {
      q.options = { ...(q.options ?? {}) };
      if (v === undefined) delete q.options[key];
      else q.options[key] = v;
    };
    const typeSel = h(
      "select",
      { name: "type" },
      TYPES.map((t) => h("option", { value: t, selected: t === p.type }, t)),
    );
    typeSel.addEventListener("change", () =>
      upd("type", (q) => {
        q.type = typeSel.value as Panel["type"];
      }),
    );
    const sourceSel = h(
      "select",
      { name: "sourceId" },
      sources.map((s) => h("option", { value: s.id, selected: s.id === p.sourceId }, s.name)),
    );
    sourceSel.addEventListener("change", () => {
      upd("source", (q) => {
        q.sourceId = sourceSel.value;
      });
      sqlEditor?.refresh();
    });
    const thresholds = input(
      "thresholds",
      (p.options?.thresholds ?? []).map((t) => `${t.value ?? "base"}:${t.color}`).join(", "),
      (v) =>
        upd("thresholds", (q) => {
          const list = v
            .split(",")
            .map((x) => x.trim())
            .filter(Boolean)
            .map((x) => {
              const [val, color] = x.split(":");
              return { value: val === "base" ? null : Number(val), color: (color ?? "").trim() };
            });
          q.options = { ...(q.options ?? {}), thresholds: list };
          if (list.length === 0) delete q.options.thresholds;
        }),
      { placeholder: "base:green, 80:red" },
    );
    const legendShow = h("input", { type: "checkbox", name: "legend-show", checked: p.options?.legend?.show !== false });
    legendShow.addEventListener("change", () =>
      upd("legend", (q) => {
        q.options = { ...(q.options ?? {}), legend: { ...(q.options?.legend ?? {}), show: legendShow.checked } };
      }),
    );
    const legendValues = input(
      "legend-values",
      (p.options?.legend?.values ?? []).join(", "),
      (v) =>
        upd("legend-values", (q) => {
          const values = v
            .split(",")
            .map((x) => x.trim())
            .filter((x): x is "last" | "min" | "max" | "mean" => ["last", "min", "max", "mean"].includes(x));
          q.options = { ...(q.options ?? {}), legend: { ...(q.options?.legend ?? {}), values } };
        }),
      { placeholder: "last, max" },
    );
    const warning = saveWarnings.of(id);
    const warningEl = warning
      ? h(
          "div",
          { class: "notice warn save-warning", role: "note", id: "save-warning", "data-warning-for": id },
          h("strong", null, "Saved with a warning: "),
          warning.message,
          " ",
          h(
            "button",
            {
              type: "button",
              class: "link",
              "aria-label": `Dismiss the warning of panel ${p.title}`,
              onclick: () => {
                saveWarnings.dismiss(id);
                renderLayout();
                renderForm();
              },
            },
            "Dismiss",
          ),
        )
      : null;
    const verdictEl = h("p", { class: "verdict small", "aria-live": "polite", id: "verdict" });
    const sqlHost = h("div", { class: "sql-editor", id: "sql-editor" });
    const previewEl = h("div", { class: "preview", id: "preview", "aria-live": "polite" });
    const idx = () => spec().panels.findIndex((x) => x.id === id);
    replace(
      formEl,
      h(
        "div",
        { class: "card-head" },
        h("h2", null, "Panel ", h("code", null, id)),
        h(
          "div",
          { class: "row" },
          h(
            "button",
            {
              type: "button",
              onclick: () => {
                const i = idx();
                if (i > 0)
                  change((s) => {
                    const [q] = s.panels.splice(i, 1);
                    s.panels.splice(i - 1, 0, q);
                  });
              },
            },
            "Move up",
          ),
          h(
            "button",
            {
              type: "button",
              onclick: () => {
                const i = idx();
                if (i >= 0 && i < spec().panels.length - 1)
                  change((s) => {
                    const [q] = s.panels.splice(i, 1);
                    s.panels.splice(i + 1, 0, q);
                  });
              },
            },
            "Move down",
          ),
          h(
            "button",
            {
              type: "button",
              onclick: () => {
                const copy = { ...structuredClone(panel(id)!), id: freshId() };
                copy.title = `${copy.title} (copy)`.slice(0, 200);
                if (copy.gridPos) copy.gridPos = { ...copy.gridPos, y: copy.gridPos.y + copy.gridPos.h };
                change((s) => {
                  s.panels.splice(idx() + 1, 0, copy);
                });
                select(copy.id);
              },
            },
            "Duplicate",
          ),
          h(
            "button",
            {
              type: "button",
              class: "danger",
              onclick: () => {
                change((s) => {
                  s.panels = s.panels.filter((x) => x.id !== id);
                });
                select(null);
              },
            },
            "Remove",
          ),
        ),
      ),
      warningEl,
      h(
        "div",
        { class: "form-grid" },
        field(
          "Title",
          input("title", p.title, (v) =>
            upd("title", (q) => {
              q.title = v;
            }),
          ),
        ),
        field("Type", typeSel),
        field("Source", sourceSel),
        field(
          "Unit",
          input(
            "unit",
            p.unit ?? "",
            (v) =>
              upd("unit", (q) => {
                if (v) q.unit = v;
                else delete q.unit;
              }),
            { placeholder: "ms, %, bytes" },
          ),
        ),
        field(
          "Decimals",
          input("decimals", String(p.options?.decimals ?? ""), (v) => upd("decimals", (q) => opt(q, "decimals", num(v))), {
            inputmode: "numeric",
          }),
        ),
        field(
          "Min",
          input("min", String(p.options?.min ?? ""), (v) => upd("min", (q) => opt(q, "min", num(v))), { inputmode: "decimal" }),
        ),
        field(
          "Max",
          input("max", String(p.options?.max ?? ""), (v) => upd("max", (q) => opt(q, "max", num(v))), { inputmode: "decimal" }),
        ),
        field("Thresholds", thresholds),
        h("label", { class: "field inline check" }, legendShow, "Show legend"),
        field("Legend values", legendValues),
      ),
      h("label", { for: "sql-editor" }, "SQL"),
      sqlHost,
      verdictEl,
      h(
        "div",
        { class: "row" },
        h("button", { type: "button", id: "preview-run", class: "primary", onclick: () => void preview(id, previewEl) }, "Preview"),
        h("span", { id: "preview-vars-slot" }, previewVariables()),
      ),
      previewEl,
    );
    sqlEditor = createSqlEditor({
      parent: sqlHost,
      doc: p.sql,
      label: `SQL of ${p.title}`,
      catalog: () => (sources.find((s) => s.id === panel(id)?.sourceId)?.catalog as Catalog | null | undefined) ?? null,
      variables: () => (spec().variables ?? []).map((v) => v.name),
      check: (text) => checkSql(panel(id)?.sourceId, text),
      onChange: (text) =>
        upd("sql", (q) => {
          q.sql = text;
        }),
      onVerdict: (v) => {
        verdictEl.textContent = v === null ? "" : v.ok ? "The guard accepts this statement." : `Refused (${v.reason}): ${v.message}`;
        verdictEl.className = `verdict small ${v === null ? "" : v.ok ? "ok" : "error"}`;
      },
    });
  }

  /** After undo/redo or a JSON edit, the open form shows the spec again (the SQL editor keeps its own history). */
  function syncForm(): void {
    const p = panel(selected);
    if (!p) return;
    for (const el of formEl.querySelectorAll<HTMLInputElement | HTMLSelectElement>("input[name], select[name]")) {
      if (el === document.activeElement) continue;
      const v = {
        title: p.title,
        type: p.type,
        sourceId: p.sourceId,
        unit: p.unit ?? "",
        decimals: String(p.options?.decimals ?? ""),
        min: String(p.options?.min ?? ""),
        max: String(p.options?.max ?? ""),
      }[el.name];
      if (v !== undefined && el.value !== v) el.value = v;
    }
    if (sqlEditor && !sqlEditor.view.hasFocus) sqlEditor.setDoc(p.sql);
  }

  /** The values a variable's preview binds: the one picked here, else its default, else its first value. */
  function valuesFor(v: Variable): string[] {
    const picked = previewValues.get(v.name);
    if (picked !== undefined) return picked;
    if (v.default !== undefined) return typeof v.default === "string" ? [v.default] : v.default;
    return v.values?.length ? [v.values[0]] : [];
  }

  /** One control per dashboard variable: the values the preview binds, as a viewer's variables bar would. */
  function previewVariables(): HTMLElement | null {
    const vars = spec().variables ?? [];
    if (vars.length === 0) return null;
    return h(
      "span",
      { class: "row preview-vars", id: "preview-vars" },
      vars.map((v) => {
        const current = valuesFor(v);
        let control: HTMLInputElement | HTMLSelectElement;
        if (v.type === "custom" && v.values?.length) {
          const sel = h(
            "select",
            { name: `preview-var-${v.name}`, multiple: v.multi === true },
            v.values.map((x) => h("option", { value: x, selected: current.includes(x) }, x)),
          );
          sel.addEventListener("change", () =>
            previewValues.set(
              v.name,
              [...sel.selectedOptions].map((o) => o.value),
            ),
          );
          control = sel;
        } else {
          const inp = h("input", { name: `preview-var-${v.name}`, value: current.join(", "), placeholder: "value" });
          inp.addEventListener("input", () =>
            previewValues.set(
              v.name,
              inp.value
                .split(",")
                .map((x) => x.trim())
                .filter(Boolean),
            ),
          );
          control = inp;
        }
        return h("label", { class: "field inline" }, `$${v.name}`, control);
      }),
    );
  }

  async function checkSql(sourceId: string | undefined, text: string): Promise<SqlVerdict | null> {
    if (!sourceId || !sources.some((s) => s.id === sourceId)) return null;
    const variables = (spec().variables ?? []).map((v) => ({ name: v.name, multi: v.multi }));
    return api<SqlVerdict>("POST", `/api/sources/${encodeURIComponent(sourceId)}/check`, { sql: text, variables });
  }

  async function preview(id: string, el: HTMLElement): Promise<void> {
    const p = panel(id);
    if (!p) return;
    replace(el, stateBox("loading", "Running through the guard…"));
    try {
      const result = await api<QueryResult & { range?: { fromMs: number; toMs: number } }>(
        "POST",
        `/api/workspaces/${encodeURIComponent(workspaceId)}/query-preview`,
        {
          sourceId: p.sourceId,
          sql: p.sql,
          time: spec().time,
          variables: spec().variables ?? [],
          values: Object.fromEntries((spec().variables ?? []).map((v) => [v.name, valuesFor(v)])),
        },
      );
      const chart = h("div", { class: `preview-chart preview-${p.type}`, "data-type": p.type });
      replace(
        el,
        h(
          "p",
          { class: "muted small" },
          `${result.rows.length} row${result.rows.length === 1 ? "" : "s"} in ${Math.round(result.elapsedMs ?? 0)} ms`,
        ),
        warnings(result, p.type),
        chart,
      );
      renderResult(chart, p.type as PanelType, result, {
        unit: p.unit,
        title: p.title,
        options: p.options as never,
        range: result.range ? [result.range.fromMs, result.range.toMs] : null,
      });
    } catch (err) {
      replace(el, stateBox("error", errorText(err)));
    }
  }

  /** The truncation and points-per-series warnings of a preview. */
  function warnings(result: QueryResult, type: string): HTMLElement | null {
    const lines: string[] = [];
    if (result.truncated)
      lines.push(
        `The result was cut at the row limit (${result.rows.length.toLocaleString()} rows kept): use $__interval or a coarser bucket.`,
      );
    if (type === "timeseries" && result.columns.length > 1) {
      const keyCols = result.columns.map((c, i) => (/(text|char)/.test(c.type) ? i : -1)).filter((i) => i >= 0);
      const counts = new Map<string, number>();
      for (const row of result.rows) {
        const key = keyCols.map((i) => String(row[i])).join("\u0000");
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      const most = Math.max(0, ...counts.values());
      if (most > maxPoints)
        lines.push(
          `${most.toLocaleString()} points per series; ${maxPoints.toLocaleString()} are kept (MAX_WINDOW_POINTS): use $__interval or a coarser bucket.`,
        );
    }
    return lines.length
      ? h(
          "ul",
          { class: "notice warn preview-warnings" },
          lines.map((l) => h("li", null, l)),
        )
      : null;
  }

  // --- Settings and variables -------------------------------------------------------------------
  function renderSettings(): void {
    const s = spec();
    const text = (name: string, value: string, apply: (s: DashboardSpec, v: string) => void) => {
      const el = h("input", { name, value });
      el.addEventListener("input", () => change((x) => apply(x, el.value), `settings:${name}`));
      return el;
    };
    const vars = s.variables ?? [];
    const updVar = (i: number, key: string, mutate: (v: Variable) => void) =>
      change((x) => {
        const v = x.variables?.[i];
        if (v) mutate(v);
      }, `var:${i}:${key}`);
    replace(
      settingsEl,
      h(
        "div",
        { class: "form-grid card" },
        field(
          "Title",
          text("title", s.title, (x, v) => {
            x.title = v;
          }),
        ),
        field(
          "From",
          text("from", s.time.from, (x, v) => {
            x.time.from = v;
          }),
        ),
        field(
          "To",
          text("to", s.time.to, (x, v) => {
            x.time.to = v;
          }),
        ),
        field(
          "Refresh (ms)",
          text("refresh", String(s.refreshIntervalMs ?? ""), (x, v) => {
            if (v.trim() === "") delete x.refreshIntervalMs;
            else x.refreshIntervalMs = Number(v);
          }),
        ),
      ),
      h("h2", null, "Variables"),
      vars.map((v, i) => {
        const optionsEl = h("div", { class: "small muted", id: `var-options-${i}` });
        const typeSel = h(
          "select",
          { name: `var-type-${i}` },
          ["custom", "query"].map((t) => h("option", { value: t, selected: v.type === t }, t)),
        );
        typeSel.addEventListener("change", () => {
          updVar(i, "type", (x) => {
            x.type = typeSel.value as Variable["type"];
          });
          renderSettings();
        });
        const inp = (key: string, value: string, apply: (x: Variable, val: string) => void) => {
          const el = h("input", { name: `var-${key}-${i}`, value });
          el.addEventListener("input", () => updVar(i, key, (x) => apply(x, el.value)));
          return el;
        };
        return h(
          "div",
          { class: "card variable" },
          h(
            "div",
            { class: "form-grid" },
            field(
              "Name",
              inp("name", v.name, (x, val) => {
                x.name = val;
              }),
            ),
            field("Type", typeSel),
            v.type === "custom"
              ? field(
                  "Values (comma-separated)",
                  inp("values", (v.values ?? []).join(", "), (x, val) => {
                    x.values = val
                      .split(",")
                      .map((y) => y.trim())
                      .filter(Boolean);
                  }),
                )
              : field(
                  "Query (one text column)",
                  inp("sql", v.sql ?? "", (x, val) => {
                    x.sql = val;
                    x.sourceId = x.sourceId ?? sources[0]?.id;
                  }),
                ),
          ),
          h(
            "div",
            { class: "row" },
            v.type === "query"
              ? h("button", { type: "button", onclick: () => void previewVariable(i, optionsEl) }, "Preview options")
              : null,
            h(
              "button",
              {
                type: "button",
                class: "danger",
                onclick: () => {
                  change((x) => {
                    x.variables?.splice(i, 1);
                  });
                  renderSettings();
                },
              },
              "Remove variable",
            ),
          ),
          optionsEl,
        );
      }),
      h(
        "button",
        {
          type: "button",
          id: "add-variable",
          onclick: () => {
            change((x) => {
              x.variables = [...(x.variables ?? []), { name: `var${(x.variables?.length ?? 0) + 1}`, type: "custom", values: [] }];
            });
            renderSettings();
          },
        },
        "Add variable",
      ),
    );
  }

  async function previewVariable(i: number, el: HTMLElement): Promise<void> {
    const v = spec().variables?.[i];
    if (!v?.sql || !v.sourceId) return;
    try {
      const r = await api<QueryResult>("POST", `/api/workspaces/${encodeURIComponent(workspaceId)}/query-preview`, {
        sourceId: v.sourceId,
        sql: v.sql,
        time: spec().time,
      });
      const values = r.rows.map((row) => String(row[0]));
      el.textContent = `${values.length} option${values.length === 1 ? "" : "s"}: ${values.slice(0, 50).join(", ")}${values.length > 50 ? ", …" : ""}`;
    } catch (err) {
      el.textContent = errorText(err);
    }
  }

  // --- JSON view --------------------------------------------------------------------------------
  function renderJson(): void {
    // Written when the JSON tab is shown (and kept current while it is), not on every keystroke elsewhere.
    if (document.activeElement === specEl || byId("pane-json").hidden) return;
    specEl.value = JSON.stringify(spec(), null, 2);
    specState.textContent = "";
  }
  specEl.addEventListener("input", () => {
    try {
      const parsed = JSON.parse(specEl.value) as DashboardSpec;
      if (!parsed || typeof parsed !== "object" || !Array.isArray(parsed.panels)) throw new SyntaxError("the spec needs a panels list");
      specState.textContent = "";
      specEl.removeAttribute("aria-invalid");
      session.apply(parsed, "json");
    } catch (err) {
      specEl.setAttribute("aria-invalid", "true");
      specState.textContent = jsonErrorText(specEl.value, err);
    }
  });

  // --- Save, conflicts, history -----------------------------------------------------------------
  async function saveNow(force?: { version: number }): Promise<void> {
    const oversized = oversizedSql(spec());
    if (oversized.length > 0) {
      notify(message, `Not saved: ${oversized.join(" ")} Your changes are kept in this editor.`, "error");
      return;
    }
    saveBtn.disabled = true;
    notify(message, "Saving…", "info");
    try {
      const out = dash
        ? await api<Dashboard>("PUT", `/api/dashboards/${encodeURIComponent(dash.id)}`, {
            version: force?.version ?? dash.version,
            spec: spec(),
          })
        : await api<Dashboard>("POST", `/api/workspaces/${encodeURIComponent(workspaceId)}/dashboards`, { spec: spec() });
      localStorage.removeItem(draftKey());
      const wasNew = !dash;
      dash = out;
      saved = structuredClone(out.spec);
      byId("version").textContent = `version ${out.version}`;
      session.apply(out.spec, "save");
      const warned = showSaveWarnings(out);
      notify(
        message,
        `Saved version ${out.version}. Viewers of this dashboard get the change at once.${savedWarningsText(warned)}`,
        warned ? "info" : "success",
      );
      if (wasNew) history.replaceState(null, "", `/dashboards/${encodeURIComponent(out.id)}/edit`);
      byId("history-open").hidden = false;
      byId<HTMLAnchorElement>("cancel").href = `/dashboards/${encodeURIComponent(out.id)}`;
    } catch (err) {
      saveBtn.disabled = false;
      if (err instanceof ApiError && err.status === 409 && dash) {
        notify(message, "Not saved: someone else saved this dashboard in between. Nothing of either change is lost.", "error");
        return void showConflict();
      }
      if (err instanceof ApiError && (err.status === 422 || err.status === 400)) return showProblem(err);
      notify(message, `${errorText(err)} Your changes are kept in this browser and can be saved again.`, "error");
    }
  }
  saveBtn.addEventListener("click", () => void saveNow());

  /** A save's points warnings replace those shown; returns how many name a panel of the spec now edited. */
  function showSaveWarnings(answer: unknown): number {
    const before = selected ? saveWarnings.of(selected)?.message : undefined;
    saveWarnings.saved(warningsOf(answer));
    renderLayout();
    // The form (and its SQL editor) is redrawn only when the selected panel's warning changed.
    if (selected && saveWarnings.of(selected)?.message !== before) renderForm();
    return saveWarnings.shown(spec().panels.map((p) => p.id)).length;
  }

  function showProblem(err: ApiError): void {
    const { refused, issues } = saveProblemLists(err.problem);
    replace(
      message,
      h("strong", null, refused.length ? "Not saved: the guard refused some panels." : "Not saved."),
      " ",
      err.message,
      h(
        "ul",
        null,
        refused.map((f) => h("li", null, h("code", null, f.panelId), ` ${f.message}`)),
        issues.map((i) => h("li", null, h("code", null, i.path || "(spec)"), ` ${i.message}`)),
      ),
    );
    message.hidden = false;
    message.className = "notice error";
  }

  async function showConflict(): Promise<void> {
    if (!dash) return;
    const dialog = byId<HTMLDialogElement>("conflict");
    const bodyEl = byId("conflict-body");
    const theirs = await api<Dashboard>("GET", `/api/dashboards/${encodeURIComponent(dash.id)}`);
    const base = await api<{ spec: DashboardSpec }>("GET", `/api/dashboards/${encodeURIComponent(dash.id)}/versions/${dash.version}`).then(
      (v) => v.spec,
      () => saved ?? dash!.spec,
    );
    const mine = structuredClone(spec());
    replace(
      bodyEl,
      h("p", null, `Version ${theirs.version} was saved after the version ${dash.version} you started from. Their change:`),
      changeList(diffSpecs(base, theirs.spec)),
      h("p", null, "Your change:"),
      changeList(diffSpecs(base, mine)),
      h(
        "div",
        { class: "row" },
        h(
          "button",
          {
            type: "button",
            class: "primary",
            id: "keep-both",
            onclick: () => {
              const merged = mergeSpecs(base as never, mine as never, theirs.spec as never);
              dash = { ...dash!, version: theirs.version };
              session.apply(merged.spec as DashboardSpec);
              dialog.close();
              void saveNow({ version: theirs.version });
            },
          },
          "Keep both",
        ),
        h(
          "button",
          {
            type: "button",
            id: "overwrite",
            onclick: () => {
              dialog.close();
              dash = { ...dash!, version: theirs.version };
              void saveNow({ version: theirs.version });
            },
          },
          "Overwrite with mine",
        ),
        h(
          "button",
          {
            type: "button",
            id: "reload",
            onclick: () => {
              localStorage.setItem(draftKey(), JSON.stringify({ base: theirs.version, spec: mine }));
              dash = theirs;
              saved = structuredClone(theirs.spec);
              session.reset(theirs.spec);
              byId("version").textContent = `version ${theirs.version}`;
              dialog.close();
              offerDraft();
            },
          },
          "Reload theirs (mine stays as a draft)",
        ),
      ),
    );
    dialog.showModal();
  }

  function changeList(changes: SpecChange[]): HTMLElement {
    if (changes.length === 0) return h("p", { class: "muted" }, "No changes.");
    const show = (v: unknown) => (v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v));
    return h(
      "ul",
      { class: "diff" },
      changes
        .slice(0, 100)
        .map((c) =>
          h(
            "li",
            { class: `diff-${c.kind}` },
            h("code", null, c.path.join(".") || "(spec)"),
            ` ${c.kind} `,
            c.before !== undefined ? h("del", null, show(c.before).slice(0, 400)) : null,
            " ",
            c.after !== undefined ? h("ins", null, show(c.after).slice(0, 400)) : null,
          ),
        ),
    );
  }

  byId("history-open").addEventListener("click", () => void openHistory());
  async function openHistory(): Promise<void> {
    if (!dash) return;
    const dialog = byId<HTMLDialogElement>("history");
    const bodyEl = byId("history-body");
    replace(bodyEl, stateBox("loading", "Loading versions…"));
    dialog.showModal();
    try {
      const { versions } = await api<{
        versions: { version: number; savedBy: string; savedAt: string; message: string | null; title: string }[];
      }>("GET", `/api/dashboards/${encodeURIComponent(dash.id)}/versions`);
      const picked: number[] = versions.slice(0, 2).map((v) => v.version);
      const diffEl = h("div", { id: "history-diff" });
      const showDiff = async () => {
        if (picked.length < 2) return replace(diffEl, h("p", { class: "muted" }, "Pick two versions to compare."));
        const [a, b] = [...picked].sort((x, y) => x - y);
        const d = await api<{ changes: SpecChange[] }>("GET", `/api/dashboards/${encodeURIComponent(dash!.id)}/diff?from=${a}&to=${b}`);
        replace(diffEl, h("h3", null, `From version ${a} to version ${b}`), changeList(d.changes));
      };
      replace(
        bodyEl,
        h(
          "table",
          { class: "history" },
          h(
            "tbody",
            null,
            versions.map((v) => {
              const box = h("input", {
                type: "checkbox",
                name: `compare-${v.version}`,
                checked: picked.includes(v.version),
                "aria-label": `Compare version ${v.version}`,
              });
              box.addEventListener("change", () => {
                if (box.checked) {
                  picked.push(v.version);
                  if (picked.length > 2) picked.shift();
                } else picked.splice(picked.indexOf(v.version), 1);
                for (const other of bodyEl.querySelectorAll<HTMLInputElement>("input[type=checkbox]"))
                  other.checked = picked.includes(Number(other.name.slice(8)));
                void showDiff();
              });
              return h(
                "tr",
                null,
                h("td", null, box),
                h("td", null, `v${v.version}`),
                h("td", null, v.title),
                h("td", null, v.savedBy),
                h("td", null, new Date(v.savedAt).toLocaleString()),
                h("td", null, v.message ?? ""),
                h(
                  "td",
                  null,
                  v.version === dash!.version
                    ? h("span", { class: "muted" }, "current")
                    : h(
                        "button",
                        { type: "button", class: "restore", "data-version": v.version, onclick: () => void restore(v.version) },
                        "Restore",
                      ),
                ),
              );
            }),
          ),
        ),
        diffEl,
      );
      await showDiff();
    } catch (err) {
      replace(bodyEl, stateBox("error", errorText(err)));
    }
  }

  async function restore(version: number): Promise<void> {
    if (!dash) return;
    try {
      const out = await api<Dashboard>("POST", `/api/dashboards/${encodeURIComponent(dash.id)}/versions/${version}/restore`, {
        version: dash.version,
      });
      dash = out;
      saved = structuredClone(out.spec);
      byId("version").textContent = `version ${out.version}`;
      session.apply(out.spec);
      byId<HTMLDialogElement>("history").close();
      const warned = showSaveWarnings(out);
      notify(message, `Restored version ${version} as version ${out.version}.${savedWarningsText(warned)}`, warned ? "info" : "success");
    } catch (err) {
      if (err instanceof ApiError && err.status === 409)
        notify(message, "Someone else saved in between: reload before restoring.", "error");
      else if (err instanceof ApiError) showProblem(err);
      else notify(message, errorText(err), "error");
      byId<HTMLDialogElement>("history").close();
    }
  }

  byId("delete").addEventListener("click", async () => {
    if (!dash || !confirm(`Delete “${dash.spec.title}”? This cannot be undone.`)) return;
    try {
      await api("DELETE", `/api/dashboards/${encodeURIComponent(dash.id)}?version=${dash.version}`);
      saved = spec();
      localStorage.removeItem(draftKey());
      location.assign(`/?workspace=${encodeURIComponent(dash.workspaceId)}`);
    } catch (err) {
      notify(
        message,
        err instanceof ApiError && err.status === 409
          ? "Someone else changed this dashboard since you opened it; reload before deleting."
          : errorText(err),
        "error",
      );
    }
  });

  byId("cancel").addEventListener("click", () => {
    // Leaving on purpose: the draft goes too (a never-saved dashboard leaves nothing behind).
    saved = spec();
    localStorage.removeItem(draftKey());
  });

  undoBtn.addEventListener("click", () => session.undo());
  redoBtn.addEventListener("click", () => session.redo());
  document.addEventListener("keydown", (e) => {
    const mod = e.ctrlKey || e.metaKey;
    if (mod && e.key.toLowerCase() === "s") {
      e.preventDefault();
      if (!saveBtn.disabled) void saveNow();
      return;
    }
    // Inside the SQL editor or a text field, their own undo applies. The SQL editor sits in a shadow root, so
    // the event's target here is its host: the path says whether the key was typed inside it.
    const t = e.target as HTMLElement;
    const inSqlEditor = e.composedPath().some((n) => n instanceof HTMLElement && n.classList.contains("cm-editor"));
    if (inSqlEditor || t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement) return;
    if (mod && e.key.toLowerCase() === "z") {
      e.preventDefault();
      if (e.shiftKey) session.redo();
      else session.undo();
    } else if (mod && e.key.toLowerCase() === "y") {
      e.preventDefault();
      session.redo();
    }
  });
}

/** A JSON parse error as "line N: message". */
export function jsonErrorText(text: string, err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  const pos = /position (\d+)/.exec(msg)?.[1];
  const lineCol = /line (\d+) column (\d+)/.exec(msg);
  if (lineCol) return `JSON error at line ${lineCol[1]}, column ${lineCol[2]}: ${msg.replace(/ in JSON at .*$/, "")}`;
  if (pos !== undefined) {
    const line = text.slice(0, Number(pos)).split("\n").length;
    return `JSON error at line ${line}: ${msg.replace(/ in JSON at .*$/, "")}`;
  }
  return `JSON error: ${msg}`;
}
