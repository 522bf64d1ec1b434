import { api, type DashboardSummary, errorText, listOf, type Workspace } from "../lib/api.ts";
import { byId, h, replace, stateBox } from "../lib/dom.ts";
import { formatAgo } from "../lib/format.ts";
import { mountWorkspacePicker } from "../lib/workspace-picker.ts";

/** The dashboard list of the chosen workspace, with create and generate for editors. */
export function bootList(): void {
  const section = byId("dashboards");
  const newButton = byId<HTMLButtonElement>("new-dashboard");
  const generateLink = byId("generate-link");
  let workspace: Workspace | null = null;
  let seq = 0;

  async function show(w: Workspace): Promise<void> {
    workspace = w;
    const mine = ++seq;
    const canEdit = w.role !== "viewer";
    newButton.hidden = !canEdit;
    generateLink.hidden = !canEdit;
    generateLink.setAttribute("href", `/generate?workspace=${encodeURIComponent(w.id)}`);
    section.setAttribute("aria-busy", "true");
    replace(section, stateBox("loading", "Loading dashboards…"));
    try {
      const list = listOf<DashboardSummary>(
        await api<unknown>("GET", `/api/workspaces/${encodeURIComponent(w.id)}/dashboards`),
        "dashboards",
      );
      if (mine !== seq) return;
      section.removeAttribute("aria-busy");
      if (list.length === 0) {
        replace(
          section,
          stateBox(
            "empty",
            canEdit ? "No dashboards yet. Create one, or let the AI draft one from a prompt." : "No dashboards in this workspace yet.",
          ),
        );
        return;
      }
      const now = Date.now();
      replace(
        section,
        h(
          "ul",
          { class: "card-list" },
          list.map((d) =>
            h(
              "li",
              { class: "card dash-card" },
              h("a", { href: `/dashboards/${encodeURIComponent(d.id)}`, class: "dash-link" }, h("h2", null, d.title)),
              h(
                "p",
                { class: "muted small" },
                d.panelCount !== undefined ? `${d.panelCount} panel${d.panelCount === 1 ? "" : "s"}` : null,
                d.updatedAt ? ` · updated ${formatAgo(Date.parse(d.updatedAt), now)}` : null,
                d.updatedBy ? ` by ${d.updatedBy}` : null,
              ),
              canEdit
                ? h("a", { href: `/dashboards/${encodeURIComponent(d.id)}/edit`, class: "small", "aria-label": `Edit ${d.title}` }, "Edit")
                : null,
            ),
          ),
        ),
      );
    } catch (err) {
      if (mine !== seq) return;
      section.removeAttribute("aria-busy");
      replace(section, stateBox("error", errorText(err)));
    }
  }

  // A new dashboard exists only once the editor saves it: Cancel there leaves nothing behind.
  newButton.addEventListener("click", () => {
    if (!workspace) return;
    location.assign(`/dashboards/new/edit?workspace=${encodeURIComponent(workspace.id)}`);
  });

  mountWorkspacePicker(byId<HTMLSelectElement>("workspace"), (w) => void show(w))
    .then((list) => {
      if (list.length === 0) {
        section.removeAttribute("aria-busy");
        // A platform admin of a new deployment lands here first: point at where workspaces are made.
        replace(
          section,
          document.body.dataset.platformAdmin === "true"
            ? stateBox(
                "empty",
                "You are not a member of any workspace yet. As a platform admin you can create workspaces and name their groups: ",
                h("a", { href: "/admin/workspaces" }, "Admin → Workspaces"),
              )
            : stateBox(
                "empty",
                "You are not a member of any workspace yet. Ask an administrator to add one of your groups to a workspace.",
              ),
        );
      }
    })
    .catch((err) => {
      section.removeAttribute("aria-busy");
      replace(section, stateBox("error", errorText(err)));
    });
}
