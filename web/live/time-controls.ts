/**
 * The live page's time controls: the range picker (relative presets, absolute from/to that take now-6h), zoom out
 * ×2, shift left and right, the refresh picker (off = paused; never below the server's floor) and the time zone.
 * They read and write a View; the page puts it in the URL.
 */
import { h, replace } from "../lib/dom.ts";
import { describeRange, formatTimestamp } from "../lib/format.ts";
import { normalizeTime, RANGE_PRESETS, REFRESH_CHOICES, parseRefresh, validZone, type View } from "../lib/view-url.ts";

export interface TimeControlsDeps {
  /** The view now (with the dashboard's saved values filled in). */
  current(): { from: string; to: string; refreshMs: number; tz: string };
  /** True when the range has ended (its fixed end is past): it reads as ended and the refresh picker is off. */
  ended(): boolean;
  /** The server's refresh floor (MIN_REFRESH_INTERVAL_MS). */
  minRefreshMs: number;
  /** A change: the fields to set on the view (undefined keeps). */
  change(next: Partial<Omit<View, "vars">>): void;
  zoomOut(): void;
  shift(direction: -1 | 1): void;
}

/** Mounts the controls into `host`; returns render(), to call when the view changes. */
export function mountTimeControls(host: HTMLElement, deps: TimeControlsDeps): () => void {
  const pickerButton = h("button", {
    type: "button",
    class: "time-button",
    id: "time-picker-button",
    "aria-haspopup": "dialog",
    "aria-expanded": "false",
    "aria-controls": "time-picker",
  });
  const fromInput = h("input", { type: "text", id: "time-from", name: "from", spellcheck: "false", autocomplete: "off" });
  const toInput = h("input", { type: "text", id: "time-to", name: "to", spellcheck: "false", autocomplete: "off" });
  const error = h("p", { class: "small error", role: "alert", hidden: true });
  const picker = h(
    "div",
    { class: "time-picker", id: "time-picker", role: "dialog", "aria-label": "Time range", hidden: true },
    h(
      "form",
      {
        class: "time-absolute",
        onsubmit: (ev: Event) => {
          ev.preventDefault();
          const from = normalizeTime(fromInput.value.trim());
          const to = normalizeTime(toInput.value.trim());
          if (from === null || to === null) {
            error.textContent = `${from === null ? "From" : "To"} must be now, now-<n><s|m|h|d|w> or a date and time (2026-11-27T08:00:00Z).`;
            error.hidden = false;
            return;
          }
          error.hidden = true;
          close();
          deps.change({ from, to });
        },
      },
      h("h3", null, "Absolute range"),
      h("label", { for: "time-from" }, "From"),
      fromInput,
      h("label", { for: "time-to" }, "To"),
      toInput,
      error,
      h("button", { type: "submit", class: "primary" }, "Apply time range"),
    ),
    h(
      "div",
      { class: "time-presets" },
      h("h3", { id: "time-presets-title" }, "Relative ranges"),
      h(
        "ul",
        { "aria-labelledby": "time-presets-title" },
        RANGE_PRESETS.map((p) =>
          h(
            "li",
            null,
            h(
              "button",
              {
                type: "button",
                class: "link preset",
                onclick: () => {
                  close();
                  deps.change({ from: p.from, to: "now" });
                },
              },
              p.label,
            ),
          ),
        ),
      ),
    ),
  );
  function open(): void {
    const c = deps.current();
    fromInput.value = c.from;
    toInput.value = c.to;
    error.hidden = true;
    picker.hidden = false;
    pickerButton.setAttribute("aria-expanded", "true");
    fromInput.focus();
  }
  function close(): void {
    picker.hidden = true;
    pickerButton.setAttribute("aria-expanded", "false");
  }
  pickerButton.addEventListener("click", () => (picker.hidden ? open() : close()));
  picker.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") {
      close();
      pickerButton.focus();
    }
  });
  document.addEventListener("click", (ev) => {
    if (!picker.hidden && !picker.contains(ev.target as Node) && !pickerButton.contains(ev.target as Node)) close();
  });

  const refresh = h("select", { id: "refresh-picker", "aria-label": "Refresh every" });
  refresh.addEventListener("change", () => deps.change({ refreshMs: parseRefresh(refresh.value) ?? undefined }));
  const tz = h("select", { id: "tz-picker", "aria-label": "Time zone" });
  const tzOther = h("input", {
    type: "text",
    id: "tz-other",
    "aria-label": "Other time zone (IANA name, e.g. Europe/Paris)",
    placeholder: "Europe/Paris",
    list: "tz-names",
    hidden: true,
    spellcheck: "false",
  });
  // The zone names (about 400) and the browser's zone come from Intl, whose first use loads the locale data (about
  // 20 ms): not at boot, where it would come before the first chart. The names fill the list when the field is
  // first shown; the browser's zone is named in its option once the page is idle.
  const datalist = h("datalist", { id: "tz-names" });
  let zonesListed = false;
  const listZones = () => {
    if (zonesListed) return;
    zonesListed = true;
    const zones = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
    replace(
      datalist,
      zones.map((z) => h("option", { value: z })),
    );
  };
  let browserZone: string | null = null;
  const idle = (f: () => void) =>
    typeof requestIdleCallback === "function" ? requestIdleCallback(() => f(), { timeout: 2000 }) : setTimeout(f, 200);
  tzOther.addEventListener("focus", listZones);
  tz.addEventListener("change", () => {
    if (tz.value === "other") {
      listZones();
      tzOther.hidden = false;
      tzOther.focus();
      return;
    }
    tzOther.hidden = true;
    deps.change({ tz: tz.value });
  });
  tzOther.addEventListener("change", () => {
    const v = tzOther.value.trim();
    if (validZone(v)) deps.change({ tz: v });
    else tzOther.setCustomValidity("Not a time zone this browser knows");
    tzOther.reportValidity();
  });
  tzOther.addEventListener("input", () => tzOther.setCustomValidity(""));

  replace(
    host,
    h(
      "button",
      {
        type: "button",
        class: "icon",
        id: "shift-left",
        "aria-label": "Earlier: shift the range back by half",
        onclick: () => deps.shift(-1),
      },
      "‹",
    ),
    h("div", { class: "time-picker-wrap" }, pickerButton, picker),
    h(
      "button",
      {
        type: "button",
        class: "icon",
        id: "shift-right",
        "aria-label": "Later: shift the range forward by half",
        onclick: () => deps.shift(1),
      },
      "›",
    ),
    h(
      "button",
      { type: "button", class: "icon", id: "zoom-out", "aria-label": "Zoom out: twice the time range", onclick: () => deps.zoomOut() },
      "−",
    ),
    refresh,
    tz,
    tzOther,
    datalist,
  );

  idle(() => {
    browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    render();
  });
  return render;

  function render(): void {
    const c = deps.current();
    const relative = c.to === "now";
    const ended = deps.ended();
    const words = relative ? describeRange({ from: c.from, to: c.to }) : rangeText(c.from, c.to, c.tz);
    pickerButton.textContent = ended ? `${words} · ended` : words;
    host.toggleAttribute("data-ended", ended);
    // Nothing is polled once a range has ended: a cadence would mean nothing until the range moves.
    refresh.disabled = ended;
    refresh.title = ended ? "This range has ended: it is not refreshed" : "";
    pickerButton.setAttribute("aria-label", `Time range: ${pickerButton.textContent}. Change`);
    const choices = REFRESH_CHOICES.map((r) => ({ value: r, ms: parseRefresh(r)! })).filter((r) => r.ms >= deps.minRefreshMs);
    const current = c.refreshMs;
    if (current > 0 && !choices.some((r) => r.ms === current)) choices.push({ value: formatMs(current) as never, ms: current });
    choices.sort((a, b) => a.ms - b.ms);
    replace(
      refresh,
      h("option", { value: "off", selected: current === 0 }, "Paused (off)"),
      choices.map((r) => h("option", { value: r.value, selected: r.ms === current }, `Every ${r.value}`)),
    );
    const named = c.tz !== "browser" && c.tz !== "utc";
    replace(
      tz,
      h("option", { value: "browser", selected: c.tz === "browser" }, browserZone ? `Browser (${browserZone})` : "Browser"),
      h("option", { value: "utc", selected: c.tz === "utc" }, "UTC"),
      named ? h("option", { value: c.tz, selected: true }, c.tz) : null,
      h("option", { value: "other" }, "Other zone…"),
    );
  }
}

function formatMs(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : `${Math.round(ms / 1000)}s`;
}

/** An absolute or mixed range in words, in the chosen zone. */
function rangeText(from: string, to: string, tz: string): string {
  const zone = tz === "browser" ? undefined : tz === "utc" ? "UTC" : tz;
  const show = (e: string) => {
    const t = Date.parse(e);
    return e.startsWith("now") || Number.isNaN(t) ? e : formatTimestamp(t, { timeZone: zone }).slice(0, 16);
  };
  return `${show(from)} to ${show(to)}`;
}
