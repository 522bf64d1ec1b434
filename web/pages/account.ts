import { api, errorText, type Workspace } from "../lib/api.ts";
import { byId, h, replace, stateBox } from "../lib/dom.ts";
import { formatNumber } from "../lib/format.ts";
import { loadWorkspaces } from "../lib/api.ts";

interface Limits {
  workspaceId: string;
  overrides: { llmRatePerMinute: number | null; llmDailyTokenBudget: number | null };
  defaults: { llmRatePerMinute: number; llmDailyTokenBudget: number };
  effective: { llmRatePerMinute: number; llmDailyTokenBudget: number };
}

const ROLE_TEXT: Record<Workspace["role"], string> = {
  viewer: "You can view dashboards and ask the assistant about them.",
  editor: "You can view, edit and generate dashboards and preview queries.",
  admin: "You can do everything here, including managing sources and AI limits.",
};

/** Account settings: workspace roles, and each admin workspace's AI limits (editable). */
export function bootAccount(): void {
  const box = byId("workspaces");
  const limitsBox = byId("limits");
  void (async () => {
    try {
      const list = await loadWorkspaces();
      box.removeAttribute("aria-busy");
      if (list.length === 0) {
        replace(box, stateBox("empty", "You are not a member of any workspace yet."));
        return;
      }
      replace(
        box,
        h(
          "ul",
          { class: "plain" },
          list.map((w) =>
            h(
              "li",
              null,
              h("strong", null, w.name),
              " ",
              h("span", { class: `role role-${w.role}` }, w.role),
              h("div", { class: "muted small" }, ROLE_TEXT[w.role]),
            ),
          ),
        ),
      );
      for (const w of list.filter((x) => x.role === "admin")) limitsBox.append(await limitsForm(w));
    } catch (err) {
      box.removeAttribute("aria-busy");
      replace(box, stateBox("error", errorText(err)));
    }
  })();
}

async function limitsForm(w: Workspace): Promise<HTMLElement> {
  const base = `/api/workspaces/${encodeURIComponent(w.id)}/limits`;
  let limits: Limits;
  try {
    limits = await api<Limits>("GET", base);
  } catch (err) {
    return h("p", { class: "error small" }, `${w.name}: ${errorText(err)}`);
  }
  const rate = h("input", {
    type: "number",
    min: 0,
    step: 1,
    name: "rate",
    placeholder: `default ${limits.defaults.llmRatePerMinute}`,
    value: limits.overrides.llmRatePerMinute ?? "",
  });
  const budget = h("input", {
    type: "number",
    min: 0,
    step: 1000,
    name: "budget",
    placeholder: `default ${limits.defaults.llmDailyTokenBudget}`,
    value: limits.overrides.llmDailyTokenBudget ?? "",
  });
  const note = h("p", { class: "small", role: "status" });
  const effective = () =>
    `In effect: ${limits.effective.llmRatePerMinute === 0 ? "no rate limit" : `${limits.effective.llmRatePerMinute} requests/min per person`}, ${limits.effective.llmDailyTokenBudget === 0 ? "no daily budget" : `${formatNumber(limits.effective.llmDailyTokenBudget)} tokens/day`}.`;
  const summary = h("p", { class: "muted small" }, effective());
  const form = h(
    "form",
    { class: "limits-form" },
    h("h3", null, `${w.name} AI limits`),
    h(
      "div",
      { class: "form-grid" },
      h("label", null, "Requests per minute per person (0 = unlimited)", rate),
      h("label", null, "Daily token budget (0 = unlimited)", budget),
    ),
    h("p", { class: "muted small" }, "Leave a field empty to use the server default."),
    summary,
    h("button", { type: "submit" }, "Save limits"),
    note,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const num = (el: HTMLInputElement) => (el.value.trim() === "" ? null : Number(el.value));
    try {
      limits = await api<Limits>("PUT", base, { llmRatePerMinute: num(rate), llmDailyTokenBudget: num(budget) });
      summary.textContent = effective();
      note.className = "small success";
      note.textContent = "Saved.";
    } catch (err) {
      note.className = "small error";
      note.textContent = errorText(err);
    }
  });
  return form;
}
