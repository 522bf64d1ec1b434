import { ApiError, api, type Dashboard, type DashboardSpec, errorText, listOf, type Source, type Workspace } from "../lib/api.ts";
import { byId, h, notify, replace, stateBox } from "../lib/dom.ts";
import { formatDuration } from "../lib/format.ts";
import { mountWorkspacePicker } from "../lib/workspace-picker.ts";

interface GenerationResult {
  spec: DashboardSpec;
  dropped: { panelId: string; title: string; sql: string; reason: string; message: string }[];
  repaired: string[];
  warnings: string[];
  catalog?: { status: string; tablesTotal: number; tablesIncluded: number; omittedTables: string[] };
  model?: string;
  usage?: { input: number; output: number };
}

/** Generate: prompt + source → a reviewed spec, saved as a new dashboard only when the user says so. */
export function bootGenerate(): void {
  const form = byId<HTMLFormElement>("generate-form");
  const sourceSel = byId<HTMLSelectElement>("source");
  const prompt = byId<HTMLTextAreaElement>("prompt");
  const button = byId<HTMLButtonElement>("generate");
  const state = byId("generate-state");
  const message = byId("message");
  const result = byId("result");
  const modelConfigured = Boolean(document.body.dataset.aiModel);
  let workspace: Workspace | null = null;

  async function showSources(w: Workspace): Promise<void> {
    workspace = w;
    replace(sourceSel, h("option", { value: "" }, "Loading…"));
    if (w.role === "viewer") {
      notify(message, "Generating needs the editor role in this workspace.", "info");
      button.disabled = true;
    } else {
      notify(message, null);
      button.disabled = !modelConfigured;
    }
    try {
      const sources = listOf<Source>(await api<unknown>("GET", `/api/workspaces/${encodeURIComponent(w.id)}/sources`), "sources");
      replace(
        sourceSel,
        sources.map((s) => h("option", { value: s.id }, s.name + (s.catalogStatus === "never_refreshed" ? " (no catalog yet)" : ""))),
      );
      if (sources.length === 0) {
        replace(sourceSel, h("option", { value: "" }, "No sources"));
        notify(message, "This workspace has no sources. An admin can add one on the Sources page.", "info");
        button.disabled = true;
      }
    } catch (err) {
      notify(message, errorText(err), "error");
    }
  }

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!workspace || !sourceSel.value) return;
    if (!prompt.value.trim()) {
      prompt.focus();
      return notify(message, "Describe the dashboard you want first.", "error");
    }
    button.disabled = true;
    notify(message, null);
    state.textContent = "Generating… this can take up to a minute.";
    replace(result, stateBox("loading", "The model is drafting panels and the guard is checking every query…"));
    const started = Date.now();
    try {
      const r = await api<GenerationResult>("POST", `/api/workspaces/${encodeURIComponent(workspace.id)}/generate`, {
        prompt: prompt.value.trim(),
        sourceId: sourceSel.value,
      });
      state.textContent = `Done in ${formatDuration(Date.now() - started)}.`;
      showResult(r, workspace);
    } catch (err) {
      state.textContent = "";
      const retry =
        err instanceof ApiError && err.status === 429 && err.retryAfter ? ` Try again in ${formatDuration(err.retryAfter * 1000)}.` : "";
      replace(result);
      notify(message, errorText(err) + retry, "error");
    } finally {
      button.disabled = false;
    }
  });

  function showResult(r: GenerationResult, w: Workspace): void {
    const save = h("button", { type: "button", class: "primary" }, "Save as a new dashboard");
    const saveNote = h("span", { class: "small", role: "status" });
    save.addEventListener("click", async () => {
      save.setAttribute("disabled", "");
      try {
        const d = await api<Dashboard>("POST", `/api/workspaces/${encodeURIComponent(w.id)}/dashboards`, { spec: r.spec });
        location.assign(`/dashboards/${encodeURIComponent(d.id)}`);
      } catch (err) {
        save.removeAttribute("disabled");
        saveNote.className = "small error";
        saveNote.textContent = errorText(err);
      }
    });
    replace(
      result,
      h(
        "article",
        { class: "card" },
        h(
          "div",
          { class: "card-head" },
          h("h2", null, r.spec.title),
          h(
            "span",
            { class: "muted small" },
            r.model ? `by ${r.model}` : null,
            r.usage ? ` · ${r.usage.input + r.usage.output} tokens` : null,
          ),
        ),
        r.warnings.length
          ? h(
              "ul",
              { class: "notice info" },
              r.warnings.map((x) => h("li", null, x)),
            )
          : null,
        r.spec.panels.length === 0
          ? stateBox("empty", "No panel survived the checks. Try a more specific prompt.")
          : h(
              "ol",
              { class: "gen-panels" },
              r.spec.panels.map((p) =>
                h(
                  "li",
                  null,
                  h("strong", null, p.title),
                  ` · ${p.type}${p.unit ? ` · ${p.unit}` : ""}`,
                  r.repaired.includes(p.id) ? h("span", { class: "tag" }, "repaired") : null,
                  h("details", null, h("summary", null, "SQL"), h("pre", { class: "code" }, p.sql)),
                ),
              ),
            ),
        r.dropped.length
          ? h(
              "div",
              { class: "dropped" },
              h("h3", null, `Dropped (${r.dropped.length}): refused by the guard`),
              h(
                "ul",
                null,
                r.dropped.map((d) =>
                  h("li", null, h("strong", null, d.title), ` — ${d.message} `, h("code", { class: "reason" }, d.reason)),
                ),
              ),
            )
          : null,
        r.catalog?.omittedTables.length
          ? h(
              "p",
              { class: "muted small" },
              `The model saw ${r.catalog.tablesIncluded} of ${r.catalog.tablesTotal} tables (catalog ${r.catalog.status}).`,
            )
          : null,
        h("div", { class: "row" }, r.spec.panels.length ? save : null, saveNote),
        h("details", null, h("summary", null, "Full spec (JSON)"), h("pre", { class: "code" }, JSON.stringify(r.spec, null, 2))),
      ),
    );
  }

  mountWorkspacePicker(byId<HTMLSelectElement>("workspace"), (w) => void showSources(w))
    .then((list) => {
      if (list.length === 0) {
        notify(message, "You are not a member of any workspace yet.", "info");
        button.disabled = true;
      }
    })
    .catch((err) => notify(message, errorText(err), "error"));
}
