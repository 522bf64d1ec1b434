/**
 * A tiny DOM builder. Text always goes in as text nodes, never as HTML, so data from the API or a
 * query result cannot inject markup. No inline styles: the CSP forbids them; classes do the work.
 */
type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

function apply(el: Element, attrs: Attrs | undefined): void {
  if (!attrs) return;
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v as EventListener);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
}

function append(el: Element, children: Child[]): void {
  for (const c of children.flat() as Child[]) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === "object" ? c : document.createTextNode(String(c)));
  }
}

/** An HTML element: h("button", { class: "primary", onclick: fn }, "Save"). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  apply(el, attrs ?? undefined);
  append(el, children as Child[]);
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";

/** An SVG element (presentation attributes only, which the CSP allows). */
export function s<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: (Child | Child[])[]
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG_NS, tag);
  apply(el, attrs ?? undefined);
  append(el, children as Child[]);
  return el;
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id}`);
  return el as T;
}

export function maybeId<T extends HTMLElement = HTMLElement>(id: string): T | null {
  return document.getElementById(id) as T | null;
}

/** Replaces an element's children. */
export function replace(el: Element, ...children: (Child | Child[])[]): void {
  el.replaceChildren();
  append(el, children as Child[]);
}

/** A status line under a page heading: info, success or error, announced to screen readers. */
export function notify(el: HTMLElement, text: string | null, kind: "info" | "success" | "error" = "info"): void {
  if (!text) {
    el.hidden = true;
    el.textContent = "";
    return;
  }
  el.hidden = false;
  el.className = `notice ${kind}`;
  el.setAttribute("role", kind === "error" ? "alert" : "status");
  el.textContent = text;
}

/** The loading / empty / error placeholder used across pages. */
export function stateBox(kind: "loading" | "empty" | "error", text: string, ...extra: Child[]): HTMLElement {
  return h(
    "div",
    { class: `state ${kind}`, role: kind === "error" ? "alert" : "status" },
    kind === "loading" ? h("span", { class: "spinner", "aria-hidden": "true" }) : null,
    h("span", null, text),
    ...extra,
  );
}
