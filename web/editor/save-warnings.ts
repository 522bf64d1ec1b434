/**
 * The points warnings a dashboard save answers (`warnings` of a create, update or restore): per panel, more points
 * per series over the saved range than the browser keeps (MAX_WINDOW_POINTS). The editor shows each next to the
 * panel it names until it is dismissed or the next save answers its own. Pure state; the page draws it.
 */
import type { PanelPointsWarning } from "../../lib/dashboards/points.ts";

export type { PanelPointsWarning };

/**
 * The warnings of a save's answer: the well-formed entries of its `warnings` (an answer without them, from an
 * older server, has none).
 */
export function warningsOf(answer: unknown): PanelPointsWarning[] {
  const list = (answer as { warnings?: unknown } | null)?.warnings;
  if (!Array.isArray(list)) return [];
  return list.filter(
    (w): w is PanelPointsWarning =>
      typeof w === "object" &&
      w !== null &&
      typeof (w as PanelPointsWarning).panelId === "string" &&
      typeof (w as PanelPointsWarning).message === "string",
  );
}

export interface SaveWarnings {
  /** A save answered: its warnings replace those shown (a save without any clears them). */
  saved(warnings: PanelPointsWarning[]): void;
  /** The person dismissed the warning of a panel. */
  dismiss(panelId: string): void;
  /** The warning shown next to a panel, if any. */
  of(panelId: string): PanelPointsWarning | undefined;
  /** Warnings still shown, of the panels that are in the spec (a panel removed since takes its warning with it). */
  shown(panelIds: readonly string[]): PanelPointsWarning[];
}

export function createSaveWarnings(): SaveWarnings {
  let byPanel = new Map<string, PanelPointsWarning>();
  return {
    saved(warnings) {
      byPanel = new Map(warnings.map((w) => [w.panelId, w]));
    },
    dismiss(panelId) {
      byPanel.delete(panelId);
    },
    of(panelId) {
      return byPanel.get(panelId);
    },
    shown(panelIds) {
      return panelIds.flatMap((id) => byPanel.get(id) ?? []);
    },
  };
}

/** The sentence added to "Saved version N." when a save warns. */
export function savedWarningsText(count: number): string {
  if (count === 0) return "";
  return count === 1
    ? " One panel gives more points per series than the browser keeps: see the warning on it."
    : ` ${count} panels give more points per series than the browser keeps: see the warnings on them.`;
}
