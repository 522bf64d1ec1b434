import { type PanelType, renderResult } from "../charts/index.ts";
import { api, type Dashboard, errorText, loginHref, type Me, type Workspace } from "../lib/api.ts";
import { panelErrorWords } from "../lib/panel-error.ts";
import { byId, h, notify, replace, stateBox } from "../lib/dom.ts";
import { describeRange, formatAgo, formatDuration } from "../lib/format.ts";
import { chatResult, mergeResult } from "../lib/panel-window.ts";
import { type DashboardSummary, decodeFrame, type PanelUpdate, streamUrl, type ViewSummary, viewParamsOf } from "../../lib/live/frames.ts";
import { RollingWindow } from "../lib/rolling-window.ts";
import { openStream, type StreamState } from "../lib/sse-client.ts";
import { resolveRange } from "../lib/time-range.ts";
import { mountChat } from "./chat.ts";

/** What the stream says about the dashboard (no SQL); panel types the charts do not know fall back to a table. */
type Summary = Omit<DashboardSummary, "panels"> & { panels: (DashboardSummary["panels"][number] & { type: PanelType })[] };

interface PanelView {
  spec: Summary["panels"][number];
  card: HTMLElement;
  body: HTMLElement;
  meta: HTMLElement;
  window: RollingWindow;
  last: PanelUpdate | null;
}

/** The live dashboard: layout from the stream's snapshot, panels updated per `panel` event. */
export function bootLive(): void {
  const body = document.body;
  const dashboardId = body.dataset.dashboardId!;
  const maxPoints = Math.max(1, Number(body.dataset.maxWindowPoints) || 720);
  const grid = byId("panels");
  const status = byId("status");
  const rangeEl = byId("range");
  const message = byId("message");
  const title = byId("title");
  const panels = new Map<string, PanelView>();
  let summary: Summary | null = null;
  /** The view the stream serves (this page's from, to, refresh and var-* resolved by the server). */
  let view: ViewSummary | null = null;
  let lastUpdate: number | null = null;
  let streamState: StreamState = "connecting";
  let retryAt: number | null = null;
  let role: Workspace["role"] | null = null;

  // Role for the Edit link; the stream itself only needs viewer.
  void (async () => {
    try {
      const [dash, me] = await Promise.all([api<Dashboard>("GET", `/api/dashboards/${dashboardId}`), api<Me>("GET", "/api/me")]);
      const ws: Workspace | undefined = me.workspaces?.find((w) => w.id === dash.workspaceId);
      role = ws?.role ?? null;
      if (role && role !== "viewer") byId("edit-link").hidden = false;
      if (!summary) {
        title.textContent = dash.spec.title;
        document.title = `${dash.spec.title} · Pulseboard`;
      }
    } catch (err) {
      if ((err as { status?: number }).status === 404) fatal(404);
    }
  })();

  /** The range the panels show: the view's, else the saved one. */
  const viewTime = () => (view ? { from: view.from, to: view.to } : (summary?.time ?? null));

  function setSummary(next: Summary, nextView?: ViewSummary): void {
    const changed = !summary || summary.version !== next.version || panels.size === 0;
    summary = next;
    if (nextView) view = nextView;
    title.textContent = next.title;
    document.title = `${next.title} · Pulseboard`;
    const time = viewTime() ?? next.time;
    rangeEl.textContent =
      view && !view.live
        ? `${describeRange(time)} · not live (the range has ended)`
        : `${describeRange(time)} · every ${formatDuration(view?.refreshMs ?? next.refreshIntervalMs)}`;
    if (!changed) return;
    // A new spec: rebuild the grid; windows restart because queries may have changed.
    panels.clear();
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
      const bodyEl = h("div", { class: "panel-body" }, stateBox("loading", "Waiting for the first result…"));
      const meta = h("span", { class: "panel-meta muted" });
      const card = h(
        "article",
        { class: `panel panel-${p.type}`, "aria-labelledby": `panel-${p.id}-title` },
        h(
          "header",
          { class: "panel-head" },
          h("h2", { id: `panel-${p.id}-title` }, p.title, p.unit ? h("span", { class: "unit" }, ` (${p.unit})`) : null),
          meta,
        ),
        bodyEl,
      );
      grid.append(card);
      panels.set(p.id, { spec: p, card, body: bodyEl, meta, window: new RollingWindow(maxPoints), last: null });
    }
  }

  function draw(view: PanelView): void {
    const u = view.last;
    if (!u) return;
    if ("error" in u) {
      view.card.classList.add("has-error");
      // The code in words first (what happened), the server's message as the detail, the code itself last.
      const code = u.error.code ?? u.error.reason;
      const words = panelErrorWords(code);
      replace(
        view.body,
        stateBox(
          "error",
          words ?? u.error.message,
          words ? h("span", { class: "detail muted" }, u.error.message) : null,
          code ? h("code", { class: "reason" }, code) : null,
        ),
      );
      view.meta.textContent = "failed";
      return;
    }
    view.card.classList.remove("has-error");
    const time = viewTime();
    const range = time ? resolveRange(time, u.at) : null;
    renderResult(view.body, view.spec.type, u.result, {
      unit: view.spec.unit,
      window: view.spec.type === "timeseries" || view.spec.type === "stat" ? view.window : undefined,
      range,
    });
    view.meta.textContent = u.result.elapsedMs !== undefined ? `${Math.round(u.result.elapsedMs)} ms` : "";
    // What a limit cut, said plainly with its fix (the server's sentences), not as a tag.
    const notes = [u.result.truncation?.message, u.result.pointsWarning?.message].filter((m): m is string => Boolean(m));
    if (notes.length > 0) view.body.append(h("p", { class: "panel-notice warn small", role: "note" }, notes.join(" ")));
  }

  function applyUpdate(u: PanelUpdate): void {
    const view = panels.get(u.panelId);
    if (!view) return;
    view.last = u;
    view.card.dataset.updatedAt = String(u.at);
    lastUpdate = Math.max(lastUpdate ?? 0, u.at);
    if ("result" in u && (view.spec.type === "timeseries" || view.spec.type === "stat")) {
      const time = viewTime();
      mergeResult(view.window, u.result, time ? resolveRange(time, u.at) : null);
    }
    draw(view);
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
            ? "This link's range, refresh or variable values are not valid for this dashboard."
            : "You do not have access to this dashboard.",
        h("a", { href: "/", class: "button" }, "All dashboards"),
      ),
    );
    status.textContent = "Offline";
    status.className = "pill bad";
  }

  function renderStatus(): void {
    const now = Date.now();
    let text: string;
    let cls = "pill";
    switch (streamState) {
      case "open":
        if (view && !view.live) text = lastUpdate ? `Not live · queried ${formatAgo(lastUpdate, now)}` : "Not live";
        else text = lastUpdate ? `Live · updated ${formatAgo(lastUpdate, now)}` : "Live";
        cls += " ok";
        break;
      case "connecting":
        text = "Connecting…";
        break;
      case "draining":
      case "reconnecting": {
        const secs = retryAt ? Math.max(0, Math.ceil((retryAt - now) / 1000)) : 0;
        text =
          streamState === "draining"
            ? `Server restarting · reconnecting${secs ? ` in ${secs} s` : "…"}`
            : `Reconnecting${secs ? ` in ${secs} s` : "…"}`;
        cls += " warn";
        break;
      }
      default:
        text = "Offline";
        cls += " bad";
    }
    if (status.textContent !== text) status.textContent = text;
    status.className = cls;
  }

  // The view is this page's own URL (from, to, refresh, var-*); absent parameters are the saved defaults.
  const stream = openStream(streamUrl(dashboardId, viewParamsOf(new URLSearchParams(location.search))), {
    onEvent(event, data) {
      const frame = decodeFrame(event, data);
      if (!frame) return;
      if (frame.event === "snapshot") {
        setSummary(frame.data.dashboard as Summary, frame.data.view);
        for (const u of frame.data.panels) applyUpdate(u);
        notify(message, null);
      } else if (frame.event === "panel") {
        applyUpdate(frame.data);
      } else if (frame.event === "dashboard") {
        const d = frame.data;
        if (d.deleted) {
          stream.close();
          replace(grid, stateBox("empty", "This dashboard was deleted.", h("a", { href: "/", class: "button" }, "All dashboards")));
          return;
        }
        setSummary(d as Summary, d.view);
        notify(message, "The dashboard was changed; showing the new version.", "info");
      }
    },
    onState(state, info) {
      streamState = state;
      retryAt = info.retryInMs !== undefined ? Date.now() + info.retryInMs : null;
      renderStatus();
    },
    onFatal: fatal,
  });
  window.addEventListener("pagehide", () => stream.close());
  setInterval(renderStatus, 1000);

  // Charts size to their card; redraw when the layout width changes.
  let lastWidth = grid.clientWidth;
  new ResizeObserver(() => {
    if (Math.abs(grid.clientWidth - lastWidth) < 8) return;
    lastWidth = grid.clientWidth;
    for (const v of panels.values()) draw(v);
  }).observe(grid);

  mountChat({
    dashboardId,
    toggle: byId("chat-toggle"),
    aside: byId("chat"),
    canApply: () => role === "editor" || role === "admin",
    panelResults: () =>
      [...panels.values()].map((v) =>
        chatResult(v.spec.id, v.last && ("result" in v.last ? { result: v.last.result } : { error: v.last.error })),
      ),
    onError: (e) => notify(message, errorText(e), "error"),
  });
}
