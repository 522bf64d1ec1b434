import { ApiError, api, errorText, listOf, type Source, type Workspace } from "../lib/api.ts";
import { byId, h, notify, replace, stateBox } from "../lib/dom.ts";
import { formatAgo } from "../lib/format.ts";
import { mountWorkspacePicker } from "../lib/workspace-picker.ts";

const SSL_MODES = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"];

/** Sources: list for everyone; admins add, edit, delete, test, refresh catalogs and draft notes. */
export function bootSources(): void {
  const list = byId("sources");
  const detail = byId("source-detail");
  const message = byId("message");
  const addBtn = byId<HTMLButtonElement>("new-source");
  const aiModel = document.body.dataset.aiModel ?? "";
  let workspace: Workspace | null = null;
  let sources: Source[] = [];

  async function show(w: Workspace, selectId?: string): Promise<void> {
    workspace = w;
    addBtn.hidden = w.role !== "admin";
    detail.hidden = true;
    list.setAttribute("aria-busy", "true");
    replace(list, stateBox("loading", "Loading sources…"));
    try {
      sources = listOf<Source>(await api<unknown>("GET", `/api/workspaces/${encodeURIComponent(w.id)}/sources`), "sources");
      list.removeAttribute("aria-busy");
      if (sources.length === 0) {
        replace(
          list,
          stateBox(
            "empty",
            w.role === "admin"
              ? "No sources yet. Add the metrics database your dashboards should query."
              : "No sources in this workspace yet. An admin can add one.",
          ),
        );
        return;
      }
      const now = Date.now();
      replace(
        list,
        h(
          "ul",
          { class: "card-list single" },
          sources.map((s) =>
            h(
              "li",
              { class: "card" },
              h("button", { type: "button", class: "source-link", onclick: () => void openById(s.id) }, h("h2", null, s.name)),
              s.host ? h("p", { class: "muted small" }, `${s.host}:${s.port ?? 5432}/${s.database ?? ""}`) : null,
              h("p", { class: "small" }, catalogLine(s, now)),
            ),
          ),
        ),
      );
      if (selectId && sources.some((s) => s.id === selectId)) await openById(selectId);
    } catch (err) {
      list.removeAttribute("aria-busy");
      replace(list, stateBox("error", errorText(err)));
    }
  }

  function catalogLine(s: Source, now: number): HTMLElement {
    const status = s.catalogStatus as string | undefined;
    if (status === "never_refreshed" || (!s.catalogRefreshedAt && !s.catalog))
      return h("span", { class: "tag warn" }, "Catalog never refreshed: queries are refused until it is");
    const when = s.catalogRefreshedAt ? `refreshed ${formatAgo(Date.parse(s.catalogRefreshedAt), now)}` : "";
    const tables = typeof s.tableCount === "number" ? s.tableCount : s.catalog?.tables.length;
    return h(
      "span",
      { class: s.catalogStale ? "tag warn" : "muted" },
      `Catalog ${s.catalogStale ? "stale, " : ""}${when}${tables !== undefined ? ` · ${tables} tables` : ""}`,
    );
  }

  /** The list omits catalogs; the detail view reads the full source. */
  async function openById(id: string): Promise<void> {
    try {
      open(await api<Source>("GET", `/api/sources/${encodeURIComponent(id)}`));
    } catch (err) {
      notify(message, errorText(err), "error");
    }
  }

  function open(s: Source | null): void {
    if (!workspace) return;
    notify(message, null);
    const admin = workspace.role === "admin";
    detail.hidden = false;
    const f = {
      name: h("input", { name: "name", required: true, maxlength: 200, value: s?.name ?? "", autocomplete: "off" }),
      host: h("input", { name: "host", required: true, maxlength: 255, value: s?.host ?? "", autocomplete: "off", spellcheck: "false" }),
      port: h("input", { name: "port", type: "number", min: 1, max: 65535, value: s?.port ?? 5432 }),
      database: h("input", { name: "database", required: true, maxlength: 63, value: s?.database ?? "", spellcheck: "false" }),
      sslmode: h(
        "select",
        { name: "sslmode" },
        SSL_MODES.map((m) => h("option", { value: m, selected: (s?.sslmode ?? "prefer") === m }, m)),
      ),
      secretRef: h("input", {
        name: "secretRef",
        required: true,
        pattern: "[A-Za-z0-9_]+",
        value: s?.secretRef ?? "",
        spellcheck: "false",
      }),
      schemas: h("input", { name: "schemas", value: (s?.schemas ?? ["public"]).join(", "), spellcheck: "false" }),
      notes: h("textarea", { name: "notes", rows: 8, maxlength: 20000 }),
    };
    f.notes.value = s?.notes ?? "";
    if (!admin) for (const el of Object.values(f)) el.setAttribute("disabled", "");
    const note = h("div", { class: "small", role: "status", "aria-live": "polite" });
    const say = (text: string, kind: "info" | "success" | "error" = "info") => {
      note.className = `small ${kind}`;
      note.textContent = text;
    };
    const values = () => ({
      name: f.name.value.trim(),
      host: f.host.value.trim(),
      port: Number(f.port.value) || 5432,
      database: f.database.value.trim(),
      sslmode: f.sslmode.value,
      secretRef: f.secretRef.value.trim(),
      schemas: f.schemas.value.split(/[\s,]+/).filter(Boolean),
      notes: f.notes.value,
    });

    const saveBtn = h("button", { type: "submit", class: "primary" }, s ? "Save changes" : "Add source");
    const form = h(
      "form",
      { class: "form" },
      h(
        "div",
        { class: "card-head" },
        h("h2", null, s ? s.name : "New source"),
        h("button", { type: "button", class: "link", onclick: () => (detail.hidden = true) }, "Close"),
      ),
      h(
        "div",
        { class: "form-grid" },
        h("label", null, "Name", f.name),
        // The API gives the connection to admins only: others see no form fields filled with defaults.
        admin ? h("label", null, "Host", f.host) : null,
        admin ? h("label", null, "Port", f.port) : null,
        admin ? h("label", null, "Database", f.database) : null,
        admin ? h("label", null, "TLS (sslmode)", f.sslmode) : null,
        admin ? h("label", null, "Credentials reference", f.secretRef) : null,
        admin ? h("label", null, "Schemas", f.schemas) : null,
      ),
      admin ? null : h("p", { class: "muted small" }, "The connection (host, port, database, TLS) is shown to workspace admins only."),
      h(
        "p",
        { class: "hint" },
        "The credentials reference names a secret the server resolves (",
        h("code", null, "<REF>_USERNAME"),
        " / ",
        h("code", null, "<REF>_PASSWORD"),
        " or the secrets backend); passwords are never entered or shown here. Use a read-only database role.",
      ),
      h("label", { for: "notes-field" }, "Notes for dashboard authors and the AI (tables, time columns, units)"),
      f.notes,
      admin
        ? h("div", { class: "row" }, saveBtn, s ? actions(s, say, f.notes) : null)
        : h("p", { class: "muted small" }, "Only workspace admins can change sources."),
      note,
      s?.catalog ? catalogView(s) : null,
    );
    f.notes.id = "notes-field";
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      saveBtn.setAttribute("disabled", "");
      try {
        const body = values();
        const saved = s
          ? await api<Source>(
              "PUT",
              `/api/sources/${encodeURIComponent(s.id)}`,
              s.version !== undefined ? { ...body, version: s.version } : body,
            )
          : await api<Source>("POST", `/api/workspaces/${encodeURIComponent(workspace!.id)}/sources`, body);
        const catalogError = (saved as { catalogError?: { detail?: string } } | undefined)?.catalogError;
        notify(
          message,
          catalogError
            ? `${s ? "Source saved" : "Source added"}, but its catalog could not be read: ${catalogError.detail ?? "unknown error"}. Fix the connection and refresh the catalog.`
            : s
              ? "Source saved."
              : "Source added.",
          catalogError ? "error" : "success",
        );
        await show(workspace!, saved?.id ?? s?.id);
      } catch (err) {
        say(
          err instanceof ApiError && err.status === 409
            ? "Someone else changed this source since you opened it. Nothing was overwritten; reopen it to see their version."
            : errorText(err),
          "error",
        );
      } finally {
        saveBtn.removeAttribute("disabled");
      }
    });
    replace(detail, form);
    f.name.focus();
  }

  function actions(s: Source, say: (t: string, k?: "info" | "success" | "error") => void, notes: HTMLTextAreaElement): HTMLElement {
    const run = async (btn: HTMLButtonElement, busy: string, fn: () => Promise<void>) => {
      btn.disabled = true;
      say(busy);
      try {
        await fn();
      } catch (err) {
        say(errorText(err), "error");
      } finally {
        btn.disabled = false;
      }
    };
    const test = h("button", { type: "button" }, "Test connection");
    test.addEventListener("click", () =>
      run(test, "Connecting…", async () => {
        const r = await api<Record<string, unknown>>("POST", `/api/sources/${encodeURIComponent(s.id)}/test`);
        const ok = r?.ok !== false;
        const detailText = typeof r?.detail === "string" ? r.detail : typeof r?.message === "string" ? r.message : "";
        // A role without temp_file_limit lets one statement's sorts fill the server's disk.
        const limits = r?.limits as { tempFileLimit?: unknown } | undefined;
        const unlimited = ok && limits?.tempFileLimit === "-1";
        say(
          ok
            ? `Connection works${typeof r?.elapsedMs === "number" ? ` (${r.elapsedMs < 1 ? "under 1" : Math.round(r.elapsedMs)} ms)` : ""}. ${detailText}${
                unlimited
                  ? " Warning: the source's role has no temp_file_limit, so one query's temp files can fill its disk; see docs/sql-guard.md (ALTER ROLE … SET temp_file_limit)."
                  : ""
              }`
            : `Connection failed: ${detailText || "see the server log"}`,
          unlimited ? "error" : ok ? "success" : "error",
        );
      }),
    );
    const refresh = h("button", { type: "button" }, "Refresh catalog");
    refresh.addEventListener("click", () =>
      run(refresh, "Reading tables and columns…", async () => {
        await api("POST", `/api/sources/${encodeURIComponent(s.id)}/catalog/refresh`);
        notify(message, "Catalog refreshed.", "success");
        await show(workspace!, s.id);
      }),
    );
    const draft = h(
      "button",
      { type: "button", disabled: !aiModel, title: aiModel ? `Uses ${aiModel}` : "AI is not configured" },
      "Draft notes with AI",
    );
    draft.addEventListener("click", () =>
      run(draft, "The model is reading the catalog…", async () => {
        const r = await api<{ notes: string; warnings?: string[] }>("POST", `/api/sources/${encodeURIComponent(s.id)}/draft`, {});
        if (notes.value.trim() && !confirm("Replace the current notes with the draft? (Nothing is saved until you press Save changes.)")) {
          say("Draft discarded.");
          return;
        }
        notes.value = r.notes;
        say(`Draft inserted for review${r.warnings?.length ? ` (${r.warnings.join("; ")})` : ""}. Edit it, then Save changes.`, "success");
      }),
    );
    const del = h("button", { type: "button", class: "danger" }, "Delete");
    del.addEventListener("click", () => {
      if (!confirm(`Delete source “${s.name}”? Panels that use it stop working.`)) return;
      void run(del, "Deleting…", async () => {
        await api("DELETE", `/api/sources/${encodeURIComponent(s.id)}`);
        notify(message, "Source deleted.", "success");
        await show(workspace!);
      });
    });
    return h("span", { class: "row" }, test, refresh, draft, del);
  }

  function catalogView(s: Source): HTMLElement {
    const tables = s.catalog?.tables ?? [];
    return h(
      "details",
      { class: "catalog" },
      h("summary", null, `Catalog: ${tables.length} tables`),
      h(
        "ul",
        { class: "plain small" },
        tables.map((t) =>
          h(
            "li",
            null,
            h("code", null, `${t.schema}.${t.name}`),
            t.timeColumn ? h("span", { class: "muted" }, ` · time: ${t.timeColumn}`) : null,
            h("div", { class: "muted" }, t.columns.map((c) => `${c.name} ${c.type}`).join(", ")),
          ),
        ),
      ),
    );
  }

  addBtn.addEventListener("click", () => open(null));
  mountWorkspacePicker(byId<HTMLSelectElement>("workspace"), (w) => void show(w))
    .then((ws) => {
      if (ws.length === 0) {
        list.removeAttribute("aria-busy");
        replace(list, stateBox("empty", "You are not a member of any workspace yet."));
      }
    })
    .catch((err) => {
      list.removeAttribute("aria-busy");
      replace(list, stateBox("error", errorText(err)));
    });
}
