/**
 * Layout on the 24-column grid for the editor: moves and resizes that stay inside the grid, and a settle
 * step that pushes overlapping panels down (as Grafana's grid does). Written here rather than taken from a
 * grid library (gridstack and react-grid-layout bring their own DOM and styles, which the page's CSP and
 * bundle size argue against); the whole algorithm is these functions and is tested beside them.
 */
export const COLUMNS = 24;
export const MAX_ROW = 10_000;
export const MAX_HEIGHT = 100;

export interface GridPos {
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface Placed {
  id: string;
  gridPos?: GridPos;
}

const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, Math.round(v)));

/** A position forced inside the grid: width 1-24, x so that x + w <= 24, y >= 0, height 1-100. */
export function clampPos(p: GridPos): GridPos {
  const w = clamp(p.w, 1, COLUMNS);
  return { x: clamp(p.x, 0, COLUMNS - w), y: clamp(p.y, 0, MAX_ROW), w, h: clamp(p.h, 1, MAX_HEIGHT) };
}

/** Positions for panels that have none: two per row, 12 wide and 8 high, below those that have one. */
export function withPositions<P extends Placed>(panels: readonly P[]): Array<P & { gridPos: GridPos }> {
  let bottom = panels.reduce((m, p) => (p.gridPos ? Math.max(m, p.gridPos.y + p.gridPos.h) : m), 0);
  let col = 0;
  return panels.map((p) => {
    if (p.gridPos) return { ...p, gridPos: clampPos(p.gridPos) };
    const gridPos = { x: col * 12, y: bottom, w: 12, h: 8 };
    col++;
    if (col === 2) {
      col = 0;
      bottom += 8;
    }
    return { ...p, gridPos };
  });
}

function overlaps(a: GridPos, b: GridPos): boolean {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

/**
 * Places panel `id` at `pos` (clamped into the grid) and pushes every panel it overlaps down, repeatedly,
 * until nothing overlaps; the moved panel keeps its place. Every panel comes back with a position.
 */
export function place<P extends Placed>(panels: readonly P[], id: string, pos: GridPos): Array<P & { gridPos: GridPos }> {
  const all = withPositions(panels);
  const target = all.find((p) => p.id === id);
  if (!target) return all;
  target.gridPos = clampPos(pos);
  // Settle top to bottom: each panel goes down until it clears every panel already settled.
  const settled: GridPos[] = [target.gridPos];
  const others = all.filter((p) => p !== target).sort((a, b) => a.gridPos.y - b.gridPos.y || a.gridPos.x - b.gridPos.x);
  for (const p of others) {
    const g = { ...p.gridPos };
    for (;;) {
      const hit = settled.find((s) => overlaps(s, g));
      if (!hit) break;
      g.y = hit.y + hit.h;
    }
    p.gridPos = g;
    settled.push(g);
  }
  return all;
}

/** The position after a keyboard step: arrows move by one cell, with `resize` they change width and height. */
export function step(pos: GridPos, key: string, resize: boolean): GridPos | null {
  const d = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] }[key];
  if (!d) return null;
  return clampPos(resize ? { ...pos, w: pos.w + d[0], h: pos.h + d[1] } : { ...pos, x: pos.x + d[0], y: pos.y + d[1] });
}
