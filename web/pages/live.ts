import { startChartWorker } from "../charts/chart-worker.ts";
import { disposeChart, type PanelDisplay, type PanelType, renderResult } from "../charts/index.ts";
import { api, type Dashboard, errorText, loginHref, type Me, type Workspace } from "../lib/api.ts";
import { byId, h, notify, replace, stateBox } from "../lib/dom.ts";
import { formatAgo } from "../lib/format.ts";
import { frameMarks } from "../lib/frame-marks.ts";
import { panelErrorWords } from "../lib/panel-error.ts";
import { chatResult } from "../lib/panel-window.ts";
import { type PanelUpdate, statValue } from "../lib/result.ts";
import { takeEarlyStream } from "../lib/early-stream.ts";
import { afterNextPaint, createEarlySnapshotIntake, takeSnapshotPanels } from "../lib/snapshot-intake.ts";
import { openStream, type StreamState } from "../lib/sse-client.ts";
import { resolveRange } from "../lib/time-range.ts";
import {
  type DashboardSummary,
  decodeFrame,
  type PanelDeltaFrame,
  splitSnapshot,
  type StreamFrame,
  type VariableSummary,
  type ViewSummary,
} from "../../lib/live/frames.ts";
import { liveStreamUrl, rangeExpressions, readView, shift, type View, writeView, zoneOf, zoomOut } from "../lib/view-url.ts";
import { openInspector, type QueryAsRun } from "../live/inspect.ts";
import { createDrawScheduler } from "../live/draw-scheduler.ts";
import { placePanel, usesGrid } from "../live/layout.ts";
import { createIdleSettler, everyPanelReported, PanelData } from "../live/panel-data.ts";
import { panelMenu } from "../live/panel-menu.ts";
import { queryAsRun } from "../live/query-as-run.ts";
import { mountTimeControls } from "../live/time-controls.ts";
import { rangeEnded, servedAfter, streamStatus } from "../live/stream-status.ts";
import { mountVariablesBar } from "../live/variables-bar.ts";
import { mountChat } from "./chat.ts";

/** What the stream says about the dashboard (no SQL); the charts' panel types and display options. */
type Summary = Omit<DashboardSummary, "panels"> & {
  panels: (Omit<DashboardSummary["panels"][number], "options"> & { type: PanelType; options?: PanelDisplay })[];
};

/** A panel of the full spec (GET /api/dashboards/{id}): layout and SQL, which the stream's summary leaves out. */
interface SpecPanel {
  id: string;
  sql?: string;
  gridPos?: { x: number; y: number; w: number; h: number };
  options?: PanelDisplay;
}

interface PanelView {
  spec: Summary["panels"][number];
  card: HTMLElement;
  body: HTMLElement;
  meta: HTMLElement;
  notice: HTMLElement;
  /** The last update and the rolling window. */
  data: PanelData;
  hidden: Set<string>;
  /**
   * The card's "waiting for the first result" box, until the card is drawn or its result is held for it outside the
   * viewport (drawn only when it scrolls in): the box then says that the result is there, rather than awaited.
   */
  waiting: HTMLElement | null;
}

/** The live dashboard: the view (range, refresh, zone, variables, full-screen panel) lives in the URL. */
export function bootLive(): void {
  const body = document.body;
  const dashboardId = body.dataset.dashboardId!;
  const maxPoints = Math.max(1, Number(body.dataset.maxWindowPoints) || 720);
  const minRefreshMs = Math.max(1000, Number(body.dataset.minRefreshMs) || 5000);
  const grid = byId("panels");
  const status = byId("status");
  const updated = byId("updated");
  const message = byId("message");
  const title = byId("title");
  const panels = new Map<string, PanelView>();
  // A frame's data goes into the panel's window at once; the panel is drawn at the next animation frame, and only
  // once it is in the viewport (docs/web.md, "Drawing").
  const scheduler = createDrawScheduler();
  const hiddenByPanel = new Map<string, Set<string>>();
  let summary: Summary | null = null;
  let specPanels = new Map<string, SpecPanel>();
  let variables: VariableSummary[] = [];
  let lastUpdate: number | null = null;
  let streamState: StreamState = "connecting";
  let retryAt: number | null = null;
  let role: Workspace["role"] | null = null;
  let view: View = readView(new URLSearchParams(location.search));
  let pausedAfterSnapshot = false;
  /** The view the stream serves, as the server resolved it (live is false for a range that has ended). */
  let served: ViewSummary | null = null;

  const effective = () => ({
    from: view.from ?? summary?.time.from ?? "now-1h",
    to: view.to ?? summary?.time.to ?? "now",
    refreshMs: view.refreshMs ?? summary?.refreshIntervalMs ?? minRefreshMs,
    tz: view.tz ?? "browser",
  });
  const timeZone = () => zoneOf(effective().tz);
  const rangeAt = (now: number) => resolveRange({ from: effective().from, to: effective().to }, now);
  /** A range that ends before now is fixed: queried once, never "Live" (nor once the server says it has ended). */
  const isPast = () => rangeEnded(served, effective().to, Date.now());

  async function loadSpec(): Promise<void> {
    try {
      const [dash, me] = await Promise.all([api<Dashboard>("GET", `/api/dashboards/${dashboardId}`), api<Me>("GET", "/api/me")]);
      const ws: Workspace | undefined = me.workspaces?.find((w) => w.id === dash.workspaceId);
      role = ws?.role ?? null;
      if (role && role !== "viewer") byId("edit-link").hidden = false;
      const spec = dash.spec as unknown as { title: string; panels: SpecPanel[]; variables?: VariableSummary[] };
      specPanels = new Map(spec.panels.map((p) => [p.id, p]));
      variables = spec.variables ?? [];
      if (!summary) {
        title.textContent = spec.title;
        document.title = `${spec.title} · Pulseboard`;
      }
      layout();
      await renderVariables(variables);
    } catch (err) {
      if ((err as { status?: number }).status === 404) fatal(404);
    }
  }

  const renderControls = mountTimeControls(byId("time-controls"), {
    current: effective,
    ended: () => isPast(),
    minRefreshMs,
    change: (next) => pushView({ ...view, ...next }),
    zoomOut: () => moveRange((r) => zoomOut(r, Date.now())),
    shift: (dir) => moveRange((r) => shift(r, dir, Date.now())),
  });
  const renderVariables = mountVariablesBar(byId("variables"), {
    dashboardId,
    current: () => view.vars,
    change: (name, values) => pushView({ ...view, vars: { ...view.vars, [name]: values } }),
    onError: (text) => notify(message, text, "error"),
  });

  /** Zoom out or shift: the new range, relative while it still ends at now. */
  function moveRange(f: (r: [number, number]) => [number, number]): void {
    const now = Date.now();
    const r = rangeAt(now);
    if (!r) return;
    const next = f(r);
    if (next[1] > now) {
      next[0] -= next[1] - now;
      next[1] = now;
    }
    pushView({ ...view, ...rangeExpressions(next, effective().to === "now", now) });
  }

  /** A new view: into the history (back walks through zooms), then applied without a reload. */
  function pushView(next: View): void {
    const before = view;
    const search = `?${writeView(new URLSearchParams(location.search), next)}`;
    if (search === location.search) return;
    view = next;
    history.pushState(null, "", `${location.pathname}${search}`);
    apply(before);
  }

  function apply(before: View): void {
    const reattach =
      before.from !== view.from ||
      before.to !== view.to ||
      before.refreshMs !== view.refreshMs ||
      JSON.stringify(before.vars) !== JSON.stringify(view.vars);
    // The stream first: attaching forgets what the previous view's server said (a past range's "ended"), so the
    // controls drawn next read the new view, not the old one's verdict until the new snapshot arrives.
    if (reattach) attach();
    renderControls();
    if (JSON.stringify(before.vars) !== JSON.stringify(view.vars)) void renderVariables(variables);
    if (before.viewPanel !== view.viewPanel) layout();
    if (!reattach) redrawAll();
    renderStatus();
  }

  window.addEventListener("popstate", () => {
    const before = view;
    view = readView(new URLSearchParams(location.search));
    apply(before);
  });

  function setSummary(next: Summary): void {
    const changed = !summary || summary.version !== next.version || panels.size === 0;
    summary = next;
    title.textContent = next.title;
    document.title = `${next.title} · Pulseboard`;
    renderControls();
    if (next.variables && JSON.stringify(next.variables) !== JSON.stringify(variables)) {
      variables = next.variables;
      void renderVariables(variables);
    }
    if (!changed) return;
    // The old cards leave the page: their charts let go of what they hold (the worker's canvases among it).
    for (const v of panels.values()) disposeChart(v.body);
    panels.clear();
    scheduler.clear();
    grid.removeAttribute("aria-busy");
    if (next.panels.length === 0) {
      replace(
        grid,
        stateBox(
          "empty",
          "This dashboard has no panels yet.",
          byId("edit-link").hidden ? null : h("a", { href: `/dashboards/${dashboardId}/edit`, class: "button" }, "Add panels"),
        ),
      );
      return;
    }
    replace(grid);
    for (const p of next.panels) {
      const waiting = stateBox("loading", "Waiting for the first result…");
      const bodyEl = h("div", { class: "panel-body" }, waiting);
      const meta = h("span", { class: "panel-meta muted" });
      const notice = h("p", { class: "panel-notice", role: "note", hidden: true });
      const card = h("article", { class: `panel panel-${p.type}`, id: `panel-${p.id}`, "aria-labelledby": `panel-${p.id}-title` });
      let hidden = hiddenByPanel.get(p.id);
      if (!hidden) {
        hidden = new Set();
        hiddenByPanel.set(p.id, hidden);
      }
      const menu = panelMenu(p.title, {
        fullScreen: () => pushView({ ...view, viewPanel: view.viewPanel === p.id ? undefined : p.id }),
        isFullScreen: () => view.viewPanel === p.id,
        inspect: (tab, from) => inspect(p.id, tab, from),
        copyLink: () => copyLink(p.id),
      });
      card.append(
        h(
          "header",
          { class: "panel-head" },
          // A title cut short by the card's width (an ellipsis) is whole in its tooltip.
          h(
            "h2",
            { id: `panel-${p.id}-title`, title: p.unit ? `${p.title} (${p.unit})` : p.title },
            p.title,
            p.unit ? h("span", { class: "unit" }, ` (${p.unit})`) : null,
          ),
          meta,
          menu,
        ),
        notice,
        bodyEl,
      );
      if (p.type === "timeseries") {
        bodyEl.tabIndex = 0;
        bodyEl.setAttribute("role", "figure");
      }
      grid.append(card);
      const windowed = p.type === "timeseries" || p.type === "stat";
      const v: PanelView = { spec: p, card, body: bodyEl, meta, notice, data: new PanelData(maxPoints, windowed), hidden, waiting };
      panels.set(p.id, v);
      scheduler.add(
        card,
        () => draw(v),
        () => heldOffscreen(v),
      );
    }
    layout();
  }

  /** Places the cards: the spec's 24-column grid when it has one, one panel alone when viewPanel names it. */
  function layout(): void {
    const gridded = usesGrid([...(summary?.panels ?? []), ...specPanels.values()]);
    grid.classList.toggle("gridded", gridded && !view.viewPanel);
    grid.classList.toggle("view-panel", Boolean(view.viewPanel));
    for (const [id, v] of panels) {
      v.card.hidden = Boolean(view.viewPanel) && view.viewPanel !== id;
      placePanel(v.card, view.viewPanel ? undefined : gridPosOf(id));
    }
    const back = document.getElementById("back-to-dashboard");
    if (back) back.hidden = !view.viewPanel;
    redrawAll();
  }

  /** The panels in the order they are laid out (top to bottom, then left to right): the full-screen one alone. */
  function drawOrder(): string[] {
    if (view.viewPanel) return [view.viewPanel];
    const ids = [...panels.keys()];
    if (!usesGrid([...(summary?.panels ?? []), ...specPanels.values()])) return ids;
    const at = (id: string) => gridPosOf(id) ?? { x: 0, y: Number.POSITIVE_INFINITY };
    return ids.sort((a, b) => at(a).y - at(b).y || at(a).x - at(b).x);
  }

  function gridPosOf(id: string): SpecPanel["gridPos"] {
    return panels.get(id)?.spec.gridPos ?? specPanels.get(id)?.gridPos;
  }

  function chartHeight(id: string): number {
    if (view.viewPanel === id) return Math.max(260, window.innerHeight - 300);
    const g = view.viewPanel ? undefined : gridPosOf(id);
    return g ? Math.max(120, g.h * 30 - 96) : 220;
  }

  function displayOf(v: PanelView): PanelDisplay {
    return { ...(specPanels.get(v.spec.id)?.options ?? {}), ...(v.spec.options ?? {}) };
  }

  function draw(view_: PanelView): void {
    const u = view_.data.last;
    if (!u || view_.card.hidden) return;
    // In view: its ticks are merged as they arrive again (the window's read below merges those that waited).
    view_.data.deferTicks = false;
    if ("error" in u) {
      view_.card.classList.add("has-error");
      const code = u.error.code ?? u.error.reason;
      const words = panelErrorWords(code);
      replace(
        view_.body,
        stateBox(
          "error",
          words ?? u.error.message,
          words ? h("span", { class: "detail muted" }, u.error.message) : null,
          code ? h("code", { class: "reason" }, code) : null,
        ),
      );
      view_.meta.textContent = "failed";
      return;
    }
    view_.card.classList.remove("has-error");
    const marks = frameMarks(u.result);
    const range = rangeAt(u.at);
    const display = displayOf(view_);
    const pick = view_.spec.type === "stat" || view_.spec.type === "gauge" ? lastComplete(u, marks.partialFrom) : undefined;
    renderResult(view_.body, view_.spec.type, u.result, {
      unit: view_.spec.unit,
      window: view_.spec.type === "timeseries" || view_.spec.type === "stat" ? view_.data.window : undefined,
      range,
      title: view_.spec.title,
      options: display,
      pick,
      timeZone: timeZone(),
      hidden: view_.hidden,
      syncKey: `dashboard-${dashboardId}`,
      onZoom: (a, b) => pushView({ ...view, ...rangeExpressions([a, b], false, Date.now()) }),
      height: chartHeight(view_.spec.id),
      partialFrom: marks.partialFrom,
      stepMs: marks.stepMs,
    });
    // The range drawn, for scripts and tests (the chart's accessible name says it in words).
    if (range) {
      view_.body.dataset.rangeFrom = String(range[0]);
      view_.body.dataset.rangeTo = String(range[1]);
    }
    view_.notice.hidden = marks.notice === null;
    view_.notice.textContent = marks.notice ?? "";
    view_.meta.textContent = u.result.elapsedMs !== undefined ? `${Math.round(u.result.elapsedMs)} ms` : "";
    // The update drawn (updatedAt is the one received): scripts and tests wait for this one.
    view_.card.dataset.drawnAt = String(u.at);
  }

  /** The stat and gauge figure: the last complete bucket when the frame marks a partial one. */
  function lastComplete(u: PanelUpdate, partialFrom: number | null): { value: number | null; at: number | null } | undefined {
    if (!("result" in u) || partialFrom === null) return undefined;
    const rows = u.result.rows.filter((r) => !r.some((c) => typeof c === "number" && c >= partialFrom && c > 946_684_800_000));
    return statValue({ ...u.result, rows });
  }

  /**
   * Every panel is drawn again (view, layout or theme changed): at the next frame, the visible ones first. After a
   * theme change the panels outside the viewport are drawn too, so none scrolls in in the old palette.
   */
  function redrawAll(everywhere = false): void {
    scheduler.invalidateAll(everywhere);
  }

  /** A panel's new result: into its window now, drawn later. */
  function applyUpdate(u: PanelUpdate): void {
    const v = panels.get(u.panelId);
    if (!v) return;
    v.data.apply(u, rangeAt(u.at));
    received(v, u.at);
  }

  /**
   * An incremental tick: applied to the panel's last full result and merged into its window, then drawn like a panel
   * frame. The server sends one only after a full result of the same stream, so a base is always held.
   */
  function applyDelta(d: PanelDeltaFrame): boolean {
    const v = panels.get(d.panelId);
    if (!v?.data.applyDelta(d, rangeAt(d.at))) return false;
    received(v, d.at);
    return true;
  }

  /**
   * A card outside the viewport with a result to draw: its ticks are merged when it is drawn (once it scrolls in), not
   * as they arrive; its waiting box says the result is there. Not a live region (the waiting box's status role):
   * every card below the fold says it at once, to be read where it is.
   */
  function heldOffscreen(v: PanelView): void {
    v.data.deferTicks = true;
    // Held with nothing received yet (every panel is invalidated when the view changes): it still waits.
    if (!v.waiting || !v.data.last) return;
    if (v.waiting.parentNode === v.body)
      v.waiting.replaceWith(h("div", { class: "state empty" }, h("span", null, "Update received: shown when it scrolls into view.")));
    v.waiting = null;
  }

  function received(v: PanelView, at: number): void {
    v.card.dataset.updatedAt = String(at);
    lastUpdate = Math.max(lastUpdate ?? 0, at);
    scheduler.invalidate(v.card);
    if (v.data.unsettled) settleWhenIdle();
  }

  /** Windows left to merge (the panels below the fold after a snapshot) are merged in idle time. */
  const settleWhenIdle = createIdleSettler(function* () {
    for (const v of panels.values()) yield v.data;
  });

  function inspect(panelId: string, tab: "data" | "query", from: HTMLElement): void {
    takeSnapshotRest();
    const v = panels.get(panelId);
    if (!v) return;
    // Its rows as they are now: the dialog keeps them (the CSV is made on a click), the next tick changes the panel's.
    const u = v.data.kept();
    const query: QueryAsRun | null =
      u && "result" in u
        ? queryAsRun({
            sql: specPanels.get(panelId)?.sql ?? "(the SQL is shown to those who can read the dashboard spec)",
            result: u.result,
            at: u.at,
            range: rangeAt(u.at),
            maxPoints,
            vars: view.vars,
            variables,
          })
        : null;
    openInspector(
      {
        title: v.spec.title,
        panelId,
        result: u && "result" in u ? u.result : null,
        error: u && "error" in u ? u.error.message : undefined,
        query,
        tab,
      },
      from,
    );
  }

  async function copyLink(panelId: string): Promise<void> {
    const url = `${location.origin}${location.pathname}?${writeView(new URLSearchParams(location.search), { ...view, viewPanel: panelId })}`;
    try {
      await navigator.clipboard.writeText(url);
      notify(message, "Link to the panel copied.", "success");
    } catch {
      notify(message, `Copy this link: ${url}`, "info");
    }
  }

  function fatal(statusCode: number): void {
    if (statusCode === 401) {
      location.assign(loginHref());
      return;
    }
    grid.removeAttribute("aria-busy");
    replace(
      grid,
      stateBox(
        "error",
        statusCode === 404
          ? "This dashboard does not exist, or you do not have access to it."
          : statusCode === 400
            ? "The server refused this view (a time range, refresh or variable value in the address)."
            : statusCode === 429
              ? "Too many different views of this dashboard are open right now; try the saved view."
              : "You do not have access to this dashboard.",
        h(
          "a",
          { href: statusCode === 400 || statusCode === 429 ? location.pathname : "/", class: "button" },
          statusCode === 400 || statusCode === 429 ? "Open the saved view" : "All dashboards",
        ),
      ),
    );
    setStatus("Offline", "bad");
  }

  /** The live region: its text changes only with the state (never every second). */
  function setStatus(text: string, kind: "" | "ok" | "warn" | "bad" | "info"): void {
    if (status.textContent !== text) status.textContent = text;
    status.className = `pill${kind ? ` ${kind}` : ""}`;
  }

  function renderStatus(): void {
    const now = Date.now();
    const st = streamStatus({ state: streamState, refreshMs: effective().refreshMs, pausedAfterSnapshot, past: isPast() });
    setStatus(st.text, st.kind);
    const secs = retryAt ? Math.max(0, Math.ceil((retryAt - now) / 1000)) : 0;
    const age =
      streamState === "reconnecting" || streamState === "draining"
        ? secs
          ? `next try in ${secs} s`
          : ""
        : lastUpdate
          ? `updated ${formatAgo(lastUpdate, now)}`
          : "";
    if (updated.textContent !== age) updated.textContent = age;
  }

  /** The panels of the last snapshot not taken in yet (they are, after the frame that draws the first). */
  let snapshotRest: { flush(): void } | null = null;
  /** Every panel's id and data, for everyPanelReported. */
  const panelData = () => [...panels].map(([id, p]): [string, PanelData] => [id, p.data]);
  function takeSnapshotRest(): void {
    const rest = snapshotRest;
    snapshotRest = null;
    rest?.flush();
  }

  let stream: ReturnType<typeof openStream> | null = null;
  /** The current attachment: callbacks of a stream replaced since are ignored. */
  let attachment: object | null = null;
  /** Opens the stream for the view (closing the one before); windows restart with the new range or values. */
  function attach(): void {
    stream?.close();
    snapshotRest = null;
    for (const v of panels.values()) {
      v.data.clear();
      delete v.card.dataset.updatedAt;
      delete v.card.dataset.drawnAt;
    }
    pausedAfterSnapshot = false;
    served = null;
    streamState = "connecting";
    const paused = view.refreshMs === 0;
    const token = {};
    attachment = token;
    const url = liveStreamUrl(dashboardId, view);
    // The snapshot's first panel in layout order, drawn from the event's first bytes while the rest arrives.
    const early = createEarlySnapshotIntake({
      head: (head) => setSummary(head.dashboard as Summary),
      order: drawOrder,
      apply: (u) => applyUpdate(u),
    });
    const s = openStream(
      url,
      {
        onPartial: (event, data) => attachment === token && early.partial(event, data),
        onEvent(event, data) {
          // Panels taken from this event while it arrived (its first one, when it is the snapshot).
          const takenEarly = early.finish();
          // Whatever follows a snapshot applies over all of it (a panel-delta to its result): its panels first.
          takeSnapshotRest();
          // A snapshot's results are parsed panel by panel: the first one drawn before the others (drawOrder()).
          const split = event === "snapshot" ? splitSnapshot(data) : null;
          const frame: StreamFrame | null = split ? { event: "snapshot", data: { ...split.head, panels: [] } } : decodeFrame(event, data);
          if (!frame) return;
          const pauseNow = () => {
            pausedAfterSnapshot = true;
            s.close();
            streamState = "closed";
            renderStatus();
          };
          served = servedAfter(frame, served);
          if (frame.event === "snapshot") {
            // The charts' lines and legend figures are drawn off this thread once the chart worker has loaded, and
            // on it before: the worker is started after the first chart is painted, so its start does not delay it.
            afterNextPaint(() => startChartWorker());
            setSummary(frame.data.dashboard as Summary);
            if (split)
              snapshotRest = takeSnapshotPanels(
                split,
                drawOrder(),
                {
                  apply: (u) => applyUpdate(u),
                  later: (fn) =>
                    afterNextPaint(() => {
                      if (attachment === token) fn();
                    }),
                },
                takenEarly,
              );
            else for (const u of frame.data.panels) applyUpdate(u);
            notify(message, null);
            // Paused: the snapshot is the view once every panel is in it; nothing more is read until refresh is
            // switched back on. A view without results yet (new) reads on until its first tick has reported.
            if (paused && everyPanelReported(panelData(), new Set(split ? split.ids : []))) pauseNow();
            renderStatus();
          } else if (frame.event === "panel") {
            applyUpdate(frame.data);
            if (paused && everyPanelReported(panelData())) pauseNow();
          } else if (frame.event === "panel-delta") {
            if (applyDelta(frame.data) && paused && everyPanelReported(panelData())) pauseNow();
          } else if (frame.event === "dashboard") {
            const d = frame.data;
            if (d.deleted) {
              s.close();
              replace(grid, stateBox("empty", "This dashboard was deleted.", h("a", { href: "/", class: "button" }, "All dashboards")));
              return;
            }
            setSummary(d as Summary);
            void loadSpec();
            notify(message, "The dashboard was changed; showing the new version.", "info");
          } else if (frame.event === "view") {
            // The range reached its fixed end: the server stopped polling it; the stream stays open (spec changes).
            renderControls();
            renderStatus();
          }
        },
        onState(state, info) {
          if (attachment !== token) return;
          // A new connection: an event cut off by the old one will not end.
          if (state === "connecting" || state === "reconnecting") early.reset();
          if (pausedAfterSnapshot && state === "closed") return;
          streamState = state;
          retryAt = info.retryInMs !== undefined ? Date.now() + info.retryInMs : null;
          renderStatus();
        },
        onFatal: fatal,
      },
      // The page's first view: its stream was opened by the page's inline script while this bundle loaded.
      { early: takeEarlyStream(url) },
    );
    stream = s;
    renderStatus();
  }

  byId("back-to-dashboard").addEventListener("click", () => pushView({ ...view, viewPanel: undefined }));
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && view.viewPanel && !document.querySelector("dialog[open]")) pushView({ ...view, viewPanel: undefined });
  });
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => redrawAll(true));

  void loadSpec();
  attach();
  renderControls();
  window.addEventListener("pagehide", () => stream?.close());
  setInterval(renderStatus, 1000);

  // Charts size to their card; redraw when the layout width changes.
  let lastWidth = grid.clientWidth;
  new ResizeObserver(() => {
    if (Math.abs(grid.clientWidth - lastWidth) < 8) return;
    lastWidth = grid.clientWidth;
    redrawAll();
  }).observe(grid);

  mountChat({
    dashboardId,
    toggle: byId("chat-toggle"),
    aside: byId("chat"),
    canApply: () => role === "editor" || role === "admin",
    panelResults: () => {
      takeSnapshotRest();
      return [...panels.values()].map((v) =>
        chatResult(v.spec.id, v.data.last && ("result" in v.data.last ? { result: v.data.last.result } : { error: v.data.last.error })),
      );
    },
    onError: (e) => notify(message, errorText(e), "error"),
  });
}
