import { renderResult } from "../charts/index.ts";
import { ApiError, api, type Dashboard, type DashboardSpec, errorText, listOf, type Me, type PanelSpec, type Source } from "../lib/api.ts";
import { byId, h, notify, replace, stateBox } from "../lib/dom.ts";
import type { QueryResult } from "../lib/result.ts";
import { formatSpec, freshPanelId, parseSpecText, specProblems } from "../lib/spec-text.ts";
import { saveProblemLists } from "../lib/save-problem.ts";

const NEW_PANEL = "__new__";

/**
 * The editor: the spec as JSON with instant checks, a query preview per panel, and a save that
 * sends the version it loaded. A 409 never overwrites: the user is told someone else saved.
 */
export function bootEditor(): void {
  const dashboardId = document.body.dataset.dashboardId!;
  const specEl = byId<HTMLTextAreaElement>("spec");
  const specState = byId("spec-state");
  const save = byId<HTMLButtonElement>("save");
  const del = byId<HTMLButtonElement>("delete");
  const versionEl = byId("version");
  const message = byId("message");
  const editor = byId("editor");
  const panelSel = byId<HTMLSelectElement>("preview-panel");
  const sourceSel = byId<HTMLSelectElement>("preview-source");
  const sqlEl = byId<HTMLTextAreaElement>("preview-sql");
  const runBtn = byId<HTMLButtonElement>("preview-run");
  const applyBtn = byId<HTMLButtonElement>("preview-apply");
  const resultEl = byId("preview-result");
  const loadingEl = editor.nextElementSibling as HTMLElement | null;

  let dash: Dashboard | null = null;
  let savedText = "";
  let conflict = false;
  let sources: Source[] = [];

  window.addEventListener("beforeunload", (e) => {
    if (dash && specEl.value !== savedText) e.preventDefault();
  });

  void (async () => {
    try {
      const d = await api<Dashboard>("GET", `/api/dashboards/${encodeURIComponent(dashboardId)}`);
      const me = await api<Me>("GET", "/api/me");
      const role = me.workspaces?.find((w) => w.id === d.workspaceId)?.role;
      loadingEl?.remove();
      editor.removeAttribute("aria-busy");
      if (role === "viewer") {
        notify(message, "You have the viewer role in this workspace: you can read this spec but not save changes.", "info");
        save.hidden = true;
        del.hidden = true;
        runBtn.disabled = true;
      }
      load(d);
      sources = listOf<Source>(await api<unknown>("GET", `/api/workspaces/${encodeURIComponent(d.workspaceId)}/sources`), "sources");
      fillSources();
      fillPanels();
    } catch (err) {
      loadingEl?.remove();
      replace(editor, stateBox("error", errorText(err), h("a", { href: "/", class: "button" }, "All dashboards")));
    }
  })();

  function load(d: Dashboard): void {
    dash = d;
    conflict = false;
    savedText = formatSpec(d.spec);
    specEl.value = savedText;
    specEl.disabled = false;
    byId("title").textContent = `Edit: ${d.spec.title}`;
    document.title = `Edit ${d.spec.title} · Pulseboard`;
    versionEl.textContent = `version ${d.version}`;
    check();
  }

  function current(): DashboardSpec | null {
    const parsed = parseSpecText(specEl.value);
    return parsed.ok && specProblems(parsed.value).length === 0 ? (parsed.value as DashboardSpec) : null;
  }

  function check(): void {
    const parsed = parseSpecText(specEl.value);
    const dirty = specEl.value !== savedText;
    let problems: string[] = [];
    if (!parsed.ok) problems = [parsed.message];
    else problems = specProblems(parsed.value);
    specEl.setAttribute("aria-invalid", String(problems.length > 0));
    specState.textContent = problems.length
      ? problems[0] + (problems.length > 1 ? ` (+${problems.length - 1} more)` : "")
      : dirty
        ? "Unsaved changes"
        : "Saved";
    specState.className = problems.length ? "error small" : "muted small";
    save.disabled = !dirty || problems.length > 0 || conflict;
  }

  specEl.addEventListener("input", () => {
    check();
    fillPanels();
  });
  specEl.addEventListener("keydown", (e) => {
    // Tab inserts two spaces instead of leaving the field; Escape then Tab still moves focus.
    if (e.key === "Tab" && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey && specEl.dataset.escaped !== "1") {
      e.preventDefault();
      specEl.setRangeText("  ", specEl.selectionStart, specEl.selectionEnd, "end");
      check();
    }
    specEl.dataset.escaped = e.key === "Escape" ? "1" : "";
    if (e.key === "s" && (e.metaKey || e.ctrlKey)) {
      e.preventDefault();
      if (!save.disabled) save.click();
    }
  });

  save.addEventListener("click", async () => {
    const spec = current();
    if (!dash || !spec) return;
    save.disabled = true;
    notify(message, "Saving…", "info");
    try {
      const saved = await api<Dashboard>("PUT", `/api/dashboards/${encodeURIComponent(dash.id)}`, { version: dash.version, spec });
      load(saved);
      notify(message, `Saved version ${saved.version}. Viewers of this dashboard get the change at once.`, "success");
    } catch (err) {
      if (err instanceof ApiError && err.status === 409) {
        conflict = true;
        const now = err.problem.currentVersion;
        replace(
          message,
          h("strong", null, "Someone else saved this dashboard"),
          ` (it is now at version ${typeof now === "number" ? now : "newer"}; you started from version ${dash.version}). Your changes were not saved and nothing was overwritten. Copy your JSON if you need it, then reload to edit their version.`,
          " ",
          h(
            "button",
            { type: "button", class: "link", onclick: () => void navigator.clipboard?.writeText(specEl.value).then(() => notifyCopied()) },
            "Copy my JSON",
          ),
          " ",
          h("button", { type: "button", class: "link", onclick: () => reload() }, "Reload"),
        );
        message.hidden = false;
        message.className = "notice error";
      } else if (err instanceof ApiError) {
        showProblem(err);
      } else notify(message, errorText(err), "error");
      check();
    }
  });

  function notifyCopied(): void {
    message.append(h("span", { class: "small" }, " Copied."));
  }

  async function reload(): Promise<void> {
    try {
      load(await api<Dashboard>("GET", `/api/dashboards/${encodeURIComponent(dashboardId)}`));
      fillPanels();
      notify(message, "Reloaded the latest version.", "info");
    } catch (err) {
      notify(message, errorText(err), "error");
    }
  }

  /** Guard refusals list each panel's reason; validation issues list each path. */
  function showProblem(err: ApiError): void {
    const { refused: failures, issues } = saveProblemLists(err.problem);
    if (failures.length === 0 && issues.length === 0) {
      notify(message, err.message, "error");
      return;
    }
    replace(
      message,
      h("strong", null, failures.length ? "Not saved: the guard refused some panels." : "Not saved: the spec is invalid."),
      h(
        "ul",
        null,
        failures.map((f) => h("li", null, h("code", null, f.panelId), ` ${f.message} `, h("span", { class: "reason" }, f.reason))),
        issues.map((i) => h("li", null, h("code", null, i.path || "(spec)"), ` ${i.message}`)),
      ),
    );
    message.hidden = false;
    message.className = "notice error";
  }

  del.addEventListener("click", async () => {
    if (!dash || !confirm(`Delete “${dash.spec.title}”? This cannot be undone.`)) return;
    try {
      await api("DELETE", `/api/dashboards/${encodeURIComponent(dash.id)}?version=${dash.version}`);
      savedText = specEl.value;
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

  // --- Query preview ---------------------------------------------------------------------------

  function panelsNow(): PanelSpec[] {
    const parsed = parseSpecText(specEl.value);
    if (!parsed.ok) return [];
    const panels = (parsed.value as { panels?: unknown }).panels;
    return Array.isArray(panels) ? (panels.filter((p) => p && typeof p === "object") as PanelSpec[]) : [];
  }

  function fillPanels(): void {
    const keep = panelSel.value;
    const panels = panelsNow();
    replace(
      panelSel,
      panels.map((p) => h("option", { value: p.id }, `${p.title || p.id} (${p.type})`)),
      h("option", { value: NEW_PANEL }, "New panel…"),
    );
    panelSel.value = panels.some((p) => p.id === keep) || keep === NEW_PANEL ? keep : (panels[0]?.id ?? NEW_PANEL);
    if (!sqlEl.value) pickPanel();
  }

  function fillSources(): void {
    replace(
      sourceSel,
      sources.map((s) => h("option", { value: s.id }, s.name)),
    );
    if (sources.length === 0)
      replace(resultEl, stateBox("empty", "This workspace has no sources yet. An admin can add one on the Sources page."));
  }

  function pickPanel(): void {
    const p = panelsNow().find((x) => x.id === panelSel.value);
    sqlEl.value =
      p?.sql ??
      "SELECT $__timeGroup(ts, $__interval) AS time, count(*) AS n\nFROM my_table\nWHERE $__timeFilter(ts)\nGROUP BY 1\nORDER BY 1";
    if (p?.sourceId && sources.some((s) => s.id === p.sourceId)) sourceSel.value = p.sourceId;
    applyBtn.textContent = p ? "Put this SQL into the spec" : "Add as a new panel";
  }
  panelSel.addEventListener("change", pickPanel);

  runBtn.addEventListener("click", async () => {
    if (!dash) return;
    const spec = parseSpecText(specEl.value);
    const time = spec.ok && (spec.value as DashboardSpec).time ? (spec.value as DashboardSpec).time : dash.spec.time;
    const panel = panelsNow().find((x) => x.id === panelSel.value);
    if (!sourceSel.value) return replace(resultEl, stateBox("error", "Pick a source first."));
    runBtn.disabled = true;
    replace(resultEl, stateBox("loading", "Running through the guard…"));
    try {
      const result = await api<QueryResult & { range?: { fromMs: number; toMs: number } }>(
        "POST",
        `/api/workspaces/${encodeURIComponent(dash.workspaceId)}/query-preview`,
        {
          sourceId: sourceSel.value,
          sql: sqlEl.value,
          time,
        },
      );
      const chart = h("div", { class: "preview-chart" });
      const table = h("details", null, h("summary", null, `Rows (${result.rows.length})`));
      const tableBody = h("div");
      table.append(tableBody);
      replace(
        resultEl,
        h(
          "p",
          { class: "muted small" },
          `${result.rows.length} row${result.rows.length === 1 ? "" : "s"} in ${Math.round(result.elapsedMs ?? 0)} ms`,
          result.truncated ? " · truncated at the row cap" : "",
        ),
        chart,
        table,
      );
      const type = panel?.type ?? "table";
      renderResult(chart, type, result, { unit: panel?.unit, range: result.range ? [result.range.fromMs, result.range.toMs] : null });
      if (type !== "table") renderResult(tableBody, "table", result);
      else table.remove();
    } catch (err) {
      const reason = err instanceof ApiError ? (err.problem.reason as string | undefined) : undefined;
      replace(resultEl, stateBox("error", errorText(err), reason ? h("code", { class: "reason" }, reason) : null));
    } finally {
      runBtn.disabled = false;
    }
  });

  applyBtn.addEventListener("click", () => {
    const parsed = parseSpecText(specEl.value);
    if (!parsed.ok) return notify(message, "Fix the JSON first.", "error");
    const spec = parsed.value as DashboardSpec;
    spec.panels = Array.isArray(spec.panels) ? spec.panels : [];
    const existing = spec.panels.find((p) => p.id === panelSel.value);
    if (existing) {
      existing.sql = sqlEl.value;
      existing.sourceId = sourceSel.value;
    } else {
      const id = freshPanelId(spec.panels.map((p) => p.id));
      spec.panels.push({ id, title: "New panel", type: "timeseries", sourceId: sourceSel.value, sql: sqlEl.value });
      panelSel.value = id;
    }
    specEl.value = formatSpec(spec);
    check();
    fillPanels();
    notify(
      message,
      existing
        ? `Updated ${existing.id} in the spec (not saved yet).`
        : "Added a panel to the spec (not saved yet); give it a title and type.",
      "info",
    );
  });
}
