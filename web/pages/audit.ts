import { api, errorText, type Workspace } from "../lib/api.ts";
import { byId, h, notify, replace, stateBox } from "../lib/dom.ts";
import { formatTimestamp } from "../lib/format.ts";
import { mountWorkspacePicker } from "../lib/workspace-picker.ts";

/** One entry as GET /api/workspaces/{id}/audit answers it. */
export interface AuditEntryRow {
  id: string;
  at: string;
  actor: { kind: "person" | "token" | "system"; id: string };
  action: string;
  target: { kind: string; id: string };
  beforeVersion: number | null;
  afterVersion: number | null;
  requestId: string | null;
}

interface AuditPage {
  entries: AuditEntryRow[];
  next: string | null;
}

/** The filters the page sends, by their query names (the same names in the page's URL and the API's). */
export const FILTERS = ["action", "actorKind", "actorId", "targetKind", "targetId", "since", "until"] as const;
const INSTANTS = new Set<string>(["since", "until"]);

/**
 * The API query of a filter form's values: empty fields left out, `since`/`until` (a datetime-local value, in the
 * browser's time zone) as ISO instants; `before` asks for the page after that entry id.
 */
export function auditQuery(values: Partial<Record<(typeof FILTERS)[number], string>>, before?: string): URLSearchParams {
  const q = new URLSearchParams();
  for (const name of FILTERS) {
    const v = values[name]?.trim();
    if (!v) continue;
    if (INSTANTS.has(name)) {
      const t = new Date(v);
      if (!Number.isNaN(t.getTime())) q.set(name, t.toISOString());
    } else q.set(name, v);
  }
  if (before) q.set("before", before);
  return q;
}

/** What changed, in words: "version 3 → 4", "created as version 1", "deleted at version 2", or nothing. */
export function versionText(e: Pick<AuditEntryRow, "beforeVersion" | "afterVersion">): string {
  if (e.beforeVersion !== null && e.afterVersion !== null)
    return e.beforeVersion === e.afterVersion ? `version ${e.afterVersion}` : `version ${e.beforeVersion} → ${e.afterVersion}`;
  if (e.afterVersion !== null) return `created as version ${e.afterVersion}`;
  if (e.beforeVersion !== null) return `deleted at version ${e.beforeVersion}`;
  return "";
}

const ACTOR_TEXT: Record<AuditEntryRow["actor"]["kind"], string> = { person: "", token: "token ", system: "provisioning: " };

/** The audit trail of the workspaces the user administers: filters in the URL, newest first, older pages on demand. */
export function bootAudit(): void {
  const section = byId("audit");
  const message = byId("message");
  const form = byId<HTMLFormElement>("audit-filters");
  const more = byId<HTMLButtonElement>("audit-more");
  let workspace: Workspace | null = null;
  let next: string | null = null;
  let body: HTMLTableSectionElement | null = null;

  const field = (name: string) => form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement | null;
  const values = () => Object.fromEntries(FILTERS.map((n) => [n, field(n)?.value ?? ""]));

  /** The form from the URL's query (a shared link), `since`/`until` back in the browser's time zone. */
  function fromUrl(): void {
    const params = new URL(location.href).searchParams;
    for (const name of FILTERS) {
      const el = field(name);
      const v = params.get(name);
      if (!el || v === null) continue;
      if (INSTANTS.has(name)) {
        const t = new Date(v);
        if (Number.isNaN(t.getTime())) continue;
        const local = new Date(t.getTime() - t.getTimezoneOffset() * 60_000);
        el.value = local.toISOString().slice(0, 19);
      } else el.value = v;
    }
  }

  function toUrl(): void {
    const u = new URL(location.href);
    for (const name of FILTERS) u.searchParams.delete(name);
    for (const [k, v] of auditQuery(values())) u.searchParams.set(k, v);
    history.replaceState(null, "", u);
  }

  function row(e: AuditEntryRow): HTMLElement {
    return h(
      "tr",
      { "data-entry-id": e.id },
      h("td", null, h("time", { datetime: e.at, title: e.at }, formatTimestamp(Date.parse(e.at)))),
      h("td", null, `${ACTOR_TEXT[e.actor.kind]}`, h("code", null, e.actor.id)),
      h("td", null, h("code", null, e.action)),
      h("td", null, `${e.target.kind} `, h("code", null, e.target.id)),
      h("td", null, versionText(e)),
      h("td", null, e.requestId ? h("code", { class: "muted" }, e.requestId) : ""),
    );
  }

  async function load(append: boolean): Promise<void> {
    if (!workspace) return;
    section.setAttribute("aria-busy", "true");
    more.disabled = true;
    try {
      const q = auditQuery(values(), append ? (next ?? undefined) : undefined);
      const page = await api<AuditPage>("GET", `/api/workspaces/${encodeURIComponent(workspace.id)}/audit?${q}`);
      section.removeAttribute("aria-busy");
      next = page.next;
      more.hidden = next === null;
      if (append && body) {
        body.append(...page.entries.map(row));
      } else if (page.entries.length === 0) {
        body = null;
        replace(
          section,
          stateBox("empty", q.toString() ? "No entries match these filters." : "No changes recorded in this workspace yet."),
        );
      } else {
        body = h("tbody", null, page.entries.map(row));
        replace(
          section,
          h(
            "div",
            { class: "table-wrap admin-table" },
            h(
              "table",
              { class: "data", id: "audit-table" },
              h("caption", { class: "sr-only" }, `Audit trail of ${workspace.name}, newest first`),
              h(
                "thead",
                null,
                h(
                  "tr",
                  null,
                  ["When", "Who", "Action", "Target", "Versions", "Request"].map((t) => h("th", { scope: "col" }, t)),
                ),
              ),
              body,
            ),
          ),
        );
      }
    } catch (err) {
      section.removeAttribute("aria-busy");
      more.hidden = true;
      if (append) notify(message, errorText(err), "error");
      else replace(section, stateBox("error", errorText(err)));
    } finally {
      more.disabled = false;
    }
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    notify(message, null);
    toUrl();
    void load(false);
  });
  form.addEventListener("reset", () => {
    // After the browser cleared the fields.
    setTimeout(() => {
      toUrl();
      void load(false);
    });
  });
  more.addEventListener("click", () => void load(true));

  fromUrl();
  void mountWorkspacePicker(
    byId<HTMLSelectElement>("workspace"),
    (w) => {
      workspace = w;
      void load(false);
    },
    (w) => w.role === "admin",
  ).then(
    (list) => {
      if (list.length === 0) {
        section.removeAttribute("aria-busy");
        replace(section, stateBox("empty", "You are not an admin of any workspace."));
      }
    },
    (err) => {
      section.removeAttribute("aria-busy");
      replace(section, stateBox("error", errorText(err)));
    },
  );
}
