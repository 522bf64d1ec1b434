/**
 * A panel's menu (a disclosure button and a list of actions, keyboard-operable): view full-screen, inspect data,
 * inspect query, copy a link to the panel.
 */
import { h } from "../lib/dom.ts";

export interface PanelMenuActions {
  fullScreen(): void;
  isFullScreen(): boolean;
  inspect(tab: "data" | "query", returnFocus: HTMLElement): void;
  copyLink(): void | Promise<void>;
}

export function panelMenu(title: string, actions: PanelMenuActions): HTMLElement {
  const button = h(
    "button",
    {
      type: "button",
      class: "icon panel-menu-button",
      "aria-haspopup": "true",
      "aria-expanded": "false",
      "aria-label": `Menu of panel ${title}`,
    },
    "⋮",
  );
  const item = (label: string, run: () => void) =>
    h(
      "li",
      { role: "none" },
      h(
        "button",
        {
          type: "button",
          role: "menuitem",
          class: "menu-item",
          onclick: () => {
            close();
            run();
          },
        },
        label,
      ),
    );
  const list = h("ul", { class: "menu", role: "menu", "aria-label": `Panel ${title}`, hidden: true });
  const fill = () => {
    list.replaceChildren(
      item(actions.isFullScreen() ? "Back to dashboard" : "View full-screen", () => actions.fullScreen()),
      item("Inspect data (table, CSV)", () => actions.inspect("data", button)),
      item("Inspect query", () => actions.inspect("query", button)),
      item("Copy link to panel", () => void actions.copyLink()),
    );
  };
  function open(): void {
    fill();
    list.hidden = false;
    button.setAttribute("aria-expanded", "true");
    (list.querySelector("button") as HTMLElement | null)?.focus();
  }
  function close(): void {
    list.hidden = true;
    button.setAttribute("aria-expanded", "false");
  }
  button.addEventListener("click", () => (list.hidden ? open() : close()));
  list.addEventListener("keydown", (ev) => {
    const items = [...list.querySelectorAll<HTMLElement>("[role=menuitem]")];
    const i = items.indexOf(document.activeElement as HTMLElement);
    if (ev.key === "Escape") {
      close();
      button.focus();
    } else if (ev.key === "ArrowDown") {
      ev.preventDefault();
      items[(i + 1) % items.length]?.focus();
    } else if (ev.key === "ArrowUp") {
      ev.preventDefault();
      items[(i - 1 + items.length) % items.length]?.focus();
    }
  });
  document.addEventListener("click", (ev) => {
    if (!list.hidden && !list.contains(ev.target as Node) && !button.contains(ev.target as Node)) close();
  });
  return h("div", { class: "panel-menu" }, button, list);
}
