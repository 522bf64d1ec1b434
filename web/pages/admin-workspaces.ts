import { ApiError, api, errorText, listOf } from "../lib/api.ts";
import { byId, h, notify, replace, stateBox } from "../lib/dom.ts";

/** A workspace as GET /api/admin/workspaces returns it. */
interface AdminWorkspace {
  id: string;
  name: string;
  groups: { viewer: string; editor: string; admin: string };
  dashboards: number;
  sources: number;
}

const ROLES = ["viewer", "editor", "admin"] as const;

/** The platform admin's workspace list: create, rename, set each role's group, delete. */
export function bootAdminWorkspaces(): void {
  const section = byId("workspaces");
  const formSection = byId("workspace-form");
  const message = byId("message");
  const newButton = byId<HTMLButtonElement>("new-workspace");

  const input = (name: string, value: string, label: string, extra: Record<string, string | boolean> = {}) =>
    h("input", { type: "text", name, value, "aria-label": label, autocomplete: "off", spellcheck: "false", ...extra });

  async function load(): Promise<void> {
    section.setAttribute("aria-busy", "true");
    try {
      const list = listOf<AdminWorkspace>(await api<unknown>("GET", "/api/admin/workspaces"), "workspaces");
      section.removeAttribute("aria-busy");
      if (list.length === 0) {
        replace(section, stateBox("empty", "No workspaces yet. Create the first one, or apply a provisioning file (npm run provision)."));
        return;
      }
      replace(section, h("ul", { class: "card-list single" }, list.map(row)));
    } catch (err) {
      section.removeAttribute("aria-busy");
      replace(section, stateBox("error", errorText(err)));
    }
  }

  function row(w: AdminWorkspace): HTMLElement {
    const name = input("name", w.name, `Name of ${w.name}`, { required: true, maxlength: "200" });
    const groups = Object.fromEntries(
      ROLES.map((r) => [r, input(r, w.groups[r], `${r} group of ${w.name}`, { maxlength: "256" })]),
    ) as Record<(typeof ROLES)[number], HTMLInputElement>;
    const save = h("button", { type: "submit", class: "primary" }, "Save");
    const remove = h("button", { type: "button", class: "danger" }, "Delete");
    const form = h(
      "form",
      { class: "form" },
      h(
        "div",
        { class: "form-grid" },
        h("label", null, "Name", name),
        ...ROLES.map((r) => h("label", null, `${r[0].toUpperCase()}${r.slice(1)} group`, groups[r])),
      ),
      h("div", { class: "actions" }, save, remove),
    );
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      save.disabled = true;
      try {
        const body = { name: name.value, groups: { viewer: groups.viewer.value, editor: groups.editor.value, admin: groups.admin.value } };
        await api("PATCH", `/api/admin/workspaces/${encodeURIComponent(w.id)}`, body);
        notify(message, `Saved ${body.name.trim()}.`, "success");
        await load();
      } catch (err) {
        notify(message, errorText(err), "error");
      } finally {
        save.disabled = false;
      }
    });
    remove.addEventListener("click", () => void del(w, remove));
    return h(
      "li",
      { class: "card" },
      h(
        "p",
        { class: "muted small" },
        h("code", null, w.id),
        ` · ${w.dashboards} dashboard${w.dashboards === 1 ? "" : "s"} · ${w.sources} source${w.sources === 1 ? "" : "s"}`,
      ),
      form,
    );
  }

  async function del(w: AdminWorkspace, button: HTMLButtonElement): Promise<void> {
    if (!confirm(`Delete the workspace ${w.name}?`)) return;
    button.disabled = true;
    const path = `/api/admin/workspaces/${encodeURIComponent(w.id)}`;
    try {
      await api("DELETE", path);
    } catch (err) {
      // A workspace that still holds dashboards or sources is refused; deleting them too takes a second, explicit yes.
      if (!(err instanceof ApiError && err.status === 409)) {
        notify(message, errorText(err), "error");
        button.disabled = false;
        return;
      }
      if (!confirm(`${err.message}\n\nDelete ${w.name} together with its dashboards and sources? This cannot be undone.`)) {
        button.disabled = false;
        return;
      }
      try {
        await api("DELETE", `${path}?force=true`);
      } catch (again) {
        notify(message, errorText(again), "error");
        button.disabled = false;
        return;
      }
    }
    notify(message, `Deleted ${w.name}.`, "success");
    await load();
  }

  function showCreate(): void {
    const id = input("id", "", "Id (optional)", { placeholder: "ws_… (optional: random when empty)", pattern: "ws_[A-Za-z0-9_-]{1,60}" });
    const name = input("name", "", "Name", { required: true, maxlength: "200" });
    const groups = Object.fromEntries(ROLES.map((r) => [r, input(r, "", `${r} group`, { maxlength: "256" })])) as Record<
      (typeof ROLES)[number],
      HTMLInputElement
    >;
    const create = h("button", { type: "submit", class: "primary" }, "Create");
    const cancel = h("button", { type: "button" }, "Cancel");
    const form = h(
      "form",
      { class: "form" },
      h("h2", null, "New workspace"),
      h(
        "div",
        { class: "form-grid" },
        h("label", null, "Name", name),
        h("label", null, "Id", id),
        ...ROLES.map((r) => h("label", null, `${r[0].toUpperCase()}${r.slice(1)} group`, groups[r])),
      ),
      h("div", { class: "actions" }, create, cancel),
    );
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      create.disabled = true;
      try {
        const body: Record<string, unknown> = {
          name: name.value,
          groups: { viewer: groups.viewer.value, editor: groups.editor.value, admin: groups.admin.value },
        };
        if (id.value.trim()) body.id = id.value.trim();
        const created = await api<AdminWorkspace>("POST", "/api/admin/workspaces", body);
        notify(message, `Created ${created.name} (${created.id}).`, "success");
        formSection.hidden = true;
        replace(formSection);
        await load();
      } catch (err) {
        notify(message, errorText(err), "error");
      } finally {
        create.disabled = false;
      }
    });
    cancel.addEventListener("click", () => {
      formSection.hidden = true;
      replace(formSection);
    });
    replace(formSection, form);
    formSection.hidden = false;
    name.focus();
  }

  newButton.addEventListener("click", showCreate);
  void load();
}
