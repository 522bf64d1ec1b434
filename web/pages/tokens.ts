import { api, errorText, listOf, type Role, type Workspace } from "../lib/api.ts";
import { byId, h, notify, replace, stateBox } from "../lib/dom.ts";
import { formatAgo, formatTimestamp } from "../lib/format.ts";
import { mountWorkspacePicker } from "../lib/workspace-picker.ts";

/** An API token as GET /api/workspaces/{id}/tokens lists it: never its secret. */
export interface ApiTokenRow {
  id: string;
  name: string;
  role: Role;
  prefix: string;
  createdBy: string;
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
  revokedBy: string | null;
}

/** What POST answers: the row and the token itself, this once. */
interface CreatedToken extends ApiTokenRow {
  token: string;
}

/** A token's state as the list shows it: revoked, expired, or active. */
export function tokenState(t: Pick<ApiTokenRow, "revokedAt" | "expiresAt">, now: number): "revoked" | "expired" | "active" {
  if (t.revokedAt) return "revoked";
  if (t.expiresAt && Date.parse(t.expiresAt) <= now) return "expired";
  return "active";
}

/** API tokens of the workspaces the user administers: list, create (the secret shown once), revoke. */
export function bootTokens(): void {
  const section = byId("tokens");
  const message = byId("message");
  const form = byId<HTMLFormElement>("token-form");
  const secretBox = byId("token-secret");
  const create = byId<HTMLButtonElement>("token-create");
  let workspace: Workspace | null = null;

  const base = (w: Workspace) => `/api/workspaces/${encodeURIComponent(w.id)}/tokens`;

  async function load(): Promise<void> {
    if (!workspace) return;
    section.setAttribute("aria-busy", "true");
    try {
      const tokens = listOf<ApiTokenRow>(await api<unknown>("GET", base(workspace)), "tokens");
      section.removeAttribute("aria-busy");
      if (tokens.length === 0) {
        replace(section, stateBox("empty", "No API tokens in this workspace yet."));
        return;
      }
      const now = Date.now();
      replace(
        section,
        h(
          "div",
          { class: "table-wrap admin-table" },
          h(
            "table",
            { class: "data", id: "token-table" },
            h("caption", { class: "sr-only" }, `API tokens of ${workspace.name}`),
            h(
              "thead",
              null,
              h(
                "tr",
                null,
                ["Name", "Role", "Starts with", "Created", "Expires", "Last used", "State", ""].map((t) =>
                  h("th", { scope: "col" }, t || h("span", { class: "sr-only" }, "Actions")),
                ),
              ),
            ),
            h(
              "tbody",
              null,
              tokens.map((t) => row(t, now)),
            ),
          ),
        ),
      );
    } catch (err) {
      section.removeAttribute("aria-busy");
      replace(section, stateBox("error", errorText(err)));
    }
  }

  function row(t: ApiTokenRow, now: number): HTMLElement {
    const state = tokenState(t, now);
    const when = (iso: string | null, none: string) =>
      iso ? h("time", { datetime: iso, title: iso }, formatTimestamp(Date.parse(iso))) : none;
    const revoke =
      state === "revoked" ? null : h("button", { type: "button", class: "danger", "aria-label": `Revoke ${t.name}` }, "Revoke");
    revoke?.addEventListener("click", () => void doRevoke(t, revoke));
    return h(
      "tr",
      { "data-token-id": t.id },
      h("td", null, t.name),
      h("td", null, h("span", { class: `role role-${t.role}` }, t.role)),
      h("td", null, h("code", null, `pbt_${t.prefix}_…`)),
      h("td", null, when(t.createdAt, ""), h("div", { class: "muted small" }, `by ${t.createdBy}`)),
      h("td", null, when(t.expiresAt, "never")),
      h("td", null, t.lastUsedAt ? h("span", { title: t.lastUsedAt }, formatAgo(Date.parse(t.lastUsedAt), now)) : "never"),
      h(
        "td",
        null,
        h("span", { class: `tag${state === "active" ? "" : " warn"}` }, state),
        t.revokedBy ? h("div", { class: "muted small" }, `by ${t.revokedBy}`) : null,
      ),
      h("td", null, revoke),
    );
  }

  async function doRevoke(t: ApiTokenRow, button: HTMLButtonElement): Promise<void> {
    if (!workspace || !confirm(`Revoke the token ${t.name}? Anything using it stops working at once.`)) return;
    button.disabled = true;
    try {
      await api("DELETE", `${base(workspace)}/${encodeURIComponent(t.id)}`);
      notify(message, `Revoked ${t.name}.`, "success");
      await load();
    } catch (err) {
      notify(message, errorText(err), "error");
      button.disabled = false;
    }
  }

  function showSecret(created: CreatedToken): void {
    const value = h("input", {
      type: "text",
      readonly: true,
      value: created.token,
      id: "token-value",
      class: "code",
      "aria-label": `The token ${created.name}`,
      spellcheck: "false",
    });
    const copy = h("button", { type: "button" }, "Copy");
    copy.addEventListener("click", async () => {
      value.select();
      try {
        await navigator.clipboard.writeText(created.token);
        copy.textContent = "Copied";
      } catch {
        // No clipboard permission: the text is selected for Ctrl-C.
        copy.textContent = "Press Ctrl-C";
      }
    });
    const done = h("button", { type: "button" }, "Done");
    done.addEventListener("click", () => {
      // The secret leaves the page: it cannot be shown again.
      secretBox.hidden = true;
      replace(secretBox);
    });
    replace(
      secretBox,
      h(
        "p",
        { role: "status" },
        h("strong", null, `Copy the token ${created.name} now.`),
        " It is shown this once and cannot be read again.",
      ),
      h("div", { class: "secret-row" }, value, copy, done),
    );
    secretBox.hidden = false;
    value.focus();
    value.select();
  }

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!workspace) return;
    const data = new FormData(form);
    const body: Record<string, unknown> = { name: String(data.get("name") ?? ""), role: String(data.get("role") ?? "viewer") };
    const days = String(data.get("expiresInDays") ?? "").trim();
    if (days) body.expiresInDays = Number(days);
    create.disabled = true;
    try {
      const created = await api<CreatedToken>("POST", base(workspace), body);
      form.reset();
      notify(message, null);
      showSecret(created);
      await load();
    } catch (err) {
      notify(message, errorText(err), "error");
    } finally {
      create.disabled = false;
    }
  });

  void mountWorkspacePicker(
    byId<HTMLSelectElement>("workspace"),
    (w) => {
      workspace = w;
      secretBox.hidden = true;
      replace(secretBox);
      void load();
    },
    (w) => w.role === "admin",
  ).then(
    (list) => {
      if (list.length === 0) {
        section.removeAttribute("aria-busy");
        form.hidden = true;
        replace(section, stateBox("empty", "You are not an admin of any workspace."));
      }
    },
    (err) => {
      section.removeAttribute("aria-busy");
      replace(section, stateBox("error", errorText(err)));
    },
  );
}
