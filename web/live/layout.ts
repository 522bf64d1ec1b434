/**
 * The live page's panel layout: the spec's 24-column grid (gridPos x, y, w, h; rows of 30 px, as Grafana's) when
 * any panel has one, else the flowing two-column layout. Positions go in through CSSOM (the CSP allows no style
 * attributes); narrow screens stack the cards in the stylesheet whatever the grid says.
 */
export interface GridPos {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** Whether the dashboard is laid out on the grid: some panel carries a gridPos. */
export function usesGrid(panels: readonly { gridPos?: GridPos }[]): boolean {
  return panels.some((p) => p.gridPos !== undefined);
}

/** Puts a card at its grid position (or clears it). */
export function placePanel(card: HTMLElement, pos: GridPos | undefined): void {
  card.style.gridColumn = pos ? `${pos.x + 1} / span ${pos.w}` : "";
  card.style.gridRow = pos ? `${pos.y + 1} / span ${pos.h}` : "";
}
