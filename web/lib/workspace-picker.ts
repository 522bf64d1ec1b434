import { loadWorkspaces, type Workspace } from "./api.ts";
import { h, replace } from "./dom.ts";

const KEY = "pulseboard.workspace";

/** Picks the workspace to show: ?workspace= in the URL, else the last one used, else the first. */
export function chooseWorkspace(list: readonly Workspace[], fromUrl: string | null, remembered: string | null): Workspace | null {
  return list.find((w) => w.id === fromUrl) ?? list.find((w) => w.id === remembered) ?? list[0] ?? null;
}

/**
 * Fills a workspace <select>, keeps the choice in the URL and localStorage, and calls `onChange`
 * with the chosen workspace now and on every change. Resolves with the list (empty: no access).
 * `only` keeps the workspaces a page is for (the admin pages: those where the user is an admin).
 */
export async function mountWorkspacePicker(
  select: HTMLSelectElement,
  onChange: (w: Workspace) => void,
  only: (w: Workspace) => boolean = () => true,
): Promise<Workspace[]> {
  const list = (await loadWorkspaces()).filter(only);
  const url = new URL(location.href);
  let remembered: string | null = null;
  try {
    remembered = localStorage.getItem(KEY);
  } catch {
    // Storage may be disabled; the URL still works.
  }
  const current = chooseWorkspace(list, url.searchParams.get("workspace"), remembered);
  replace(
    select,
    list.map((w) => h("option", { value: w.id, selected: w.id === current?.id }, `${w.name} (${w.role})`)),
  );
  select.disabled = list.length <= 1;
  const pick = (w: Workspace) => {
    try {
      localStorage.setItem(KEY, w.id);
    } catch {
      // ignore
    }
    const u = new URL(location.href);
    u.searchParams.set("workspace", w.id);
    history.replaceState(null, "", u);
    onChange(w);
  };
  select.addEventListener("change", () => {
    const w = list.find((x) => x.id === select.value);
    if (w) pick(w);
  });
  if (current) pick(current);
  return list;
}
