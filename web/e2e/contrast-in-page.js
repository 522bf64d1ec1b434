// The contrast measurement that runs in the page (web/e2e/contrast.ts reads this file and evaluates it there). Plain
// JavaScript on purpose: a function passed from the TypeScript test would arrive compiled with the test runner's
// helpers (esbuild's __name), which do not exist in the page. The file is one function expression of `within`: a CSS
// selector to measure only inside (null: the whole body); contrast.ts calls it (the formatter's trailing ";" dropped). Open shadow roots are walked too
// (the SQL editor lives in one), their backgrounds read through the host.
(within) => {
  const probe = document.createElement("canvas").getContext("2d", { willReadFrequently: true });
  /** Any CSS colour the browser computes (rgb(), color(srgb …), oklch …) as 8-bit sRGB and alpha, via a canvas. */
  const parse = (css) => {
    const m = /^rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)$/.exec(css);
    if (m) return [Number(m[1]), Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])];
    probe.clearRect(0, 0, 1, 1);
    probe.fillStyle = "#000";
    probe.fillStyle = css;
    probe.fillRect(0, 0, 1, 1);
    const d = probe.getImageData(0, 0, 1, 1).data;
    return [d[0], d[1], d[2], d[3] / 255];
  };
  /** `top` painted over the opaque `under`. */
  const over = (top, under) => {
    const a = top[3];
    return [top[0] * a + under[0] * (1 - a), top[1] * a + under[1] * (1 - a), top[2] * a + under[2] * (1 - a), 1];
  };
  const luminance = (c) => {
    const lin = (v) => {
      const s = v / 255;
      return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
  };
  const ratio = (a, b) => {
    const [l1, l2] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (l1 + 0.05) / (l2 + 0.05);
  };
  const hex = (c) =>
    `#${c
      .slice(0, 3)
      .map((v) => Math.round(v).toString(16).padStart(2, "0"))
      .join("")}`;
  // The canvas behind everything: the root's background, else the browser's default for the scheme in use.
  const dark = matchMedia("(prefers-color-scheme: dark)").matches;
  const canvasColor = dark ? [18, 18, 18, 1] : [255, 255, 255, 1];

  /** The colour behind `el`'s text, or null when a gradient or image is painted there. */
  function backgroundOf(el) {
    const layers = [];
    let opacity = 1;
    for (let e = el; e; e = e.parentElement ?? (e.parentNode instanceof ShadowRoot ? e.parentNode.host : null)) {
      const cs = getComputedStyle(e);
      opacity *= Number(cs.opacity);
      if (cs.backgroundImage !== "none") return null;
      const bg = parse(cs.backgroundColor);
      if (bg[3] > 0) layers.push(bg);
      if (bg[3] >= 1) break;
    }
    let color = canvasColor;
    for (const layer of layers.reverse()) color = over(layer, color);
    return { color, opacity };
  }

  const ownText = (el) =>
    [...el.childNodes]
      .filter((n) => n.nodeType === Node.TEXT_NODE)
      .map((n) => n.textContent ?? "")
      .join("")
      .trim();
  const describe = (el) => `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ""}${[...el.classList].map((c) => `.${c}`).join("")}`;

  let checked = 0;
  let skipped = 0;
  const failures = [];
  function* elements(root) {
    for (const el of root.querySelectorAll("*")) {
      yield el;
      if (el.shadowRoot) yield* elements(el.shadowRoot);
    }
  }
  const scope = within ? document.querySelector(within) : document.body;
  for (const el of scope ? elements(scope.shadowRoot ?? scope) : []) {
    if (["SCRIPT", "STYLE", "NOSCRIPT", "OPTION", "TEMPLATE", "CANVAS"].includes(el.tagName) || el.closest("svg")) continue;
    const field =
      el instanceof HTMLSelectElement || (el instanceof HTMLInputElement && ["text", "number", "search", "url", "email"].includes(el.type));
    const text = field ? (el instanceof HTMLSelectElement ? (el.selectedOptions[0]?.text ?? "") : el.value) : ownText(el);
    if (!text) continue;
    if (!el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) continue;
    const rect = el.getBoundingClientRect();
    // Nothing drawn, or visually hidden text (the 1 px clip of .sr-only), which is for screen readers only.
    if (rect.width <= 1 || rect.height <= 1) continue;
    if (el.closest(":disabled, [aria-disabled='true']")) continue;
    const behind = backgroundOf(el);
    if (!behind) {
      skipped++;
      continue;
    }
    const cs = getComputedStyle(el);
    let fg = parse(cs.color);
    fg = [fg[0], fg[1], fg[2], fg[3] * behind.opacity];
    const shown = over(fg, behind.color);
    const size = Number.parseFloat(cs.fontSize);
    const bold = Number(cs.fontWeight) >= 700;
    const required = size >= 24 || (size >= 18.66 && bold) ? 3 : 4.5;
    const r = ratio(shown, behind.color);
    checked++;
    if (r < required) {
      failures.push({
        element: describe(el),
        text: text.slice(0, 60),
        color: hex(shown),
        background: hex(behind.color),
        ratio: Math.round(r * 100) / 100,
        required,
      });
    }
  }
  return { checked, skipped, failures };
};
