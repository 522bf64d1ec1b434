/** Series colours come from CSS classes (.s0 … .s9) so the palette follows light and dark themes. */
export const PALETTE_SIZE = 10;

export function seriesClass(i: number): string {
  return `s${i % PALETTE_SIZE}`;
}

/** Chart geometry in CSS pixels; the SVG's viewBox matches, so text stays crisp at any width. */
export interface Size {
  width: number;
  height: number;
}

export function measure(el: HTMLElement, fallback: Size): Size {
  const r = el.getBoundingClientRect();
  return { width: Math.max(120, Math.round(r.width) || fallback.width), height: Math.max(80, Math.round(r.height) || fallback.height) };
}
