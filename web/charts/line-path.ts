/**
 * The line of one time series in canvas pixels, for uPlot's `series.paths`. uPlot's own `linear` builder costs about
 * 0.2 ms a series of 720 points in Chromium (three closures and a scale lookup per point, a native call per point);
 * this one maps values with two precomputed linear coefficients and joins the points of one pixel column into at most
 * a vertical run (the first, lowest, highest and last value), which is what a 1 px line can show there. What it
 * draws is uPlot's linear line: vertices rounded to whole device pixels (uPlot's pxAlign 1), a null breaks the line
 * (a gap), an undefined cell (no sample at this x) is skipped and the line joins across it. The chart worker gets the
 * columns encoded as Float64Arrays (columns-delta.ts), where a gap is -Infinity and "no sample" NaN (JSON carries neither,
 * so no value can be mistaken for them); the tracer reads both forms.
 */

/** A gap (null) in an encoded column. */
export const GAP = Number.NEGATIVE_INFINITY;

/** What the tracer writes to (the canvas context in the browser). */
export interface PathSink {
  moveTo(x: number, y: number): void;
  lineTo(x: number, y: number): void;
}

/** A box in pixels (inclusive). */
export interface Box {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

/** pixel = offset + factor * value, for x and for y. */
export interface Mapping {
  x0: number;
  kx: number;
  y0: number;
  ky: number;
}

/**
 * Traces `ys` against `xs` from index `i0` to `i1` (inclusive) into `sink`. Points that land in the same pixel
 * column are joined into one vertical run: the column's first point, then its lowest and highest (when they are
 * not the first or last), then its last, as uPlot's decimation does. Returns whether every vertex lies in `box`
 * (then the line needs no clip to stay in it).
 */
export function traceLine(
  sink: PathSink,
  xs: ArrayLike<number>,
  ys: ArrayLike<number | null | undefined>,
  i0: number,
  i1: number,
  m: Mapping,
  box: Box,
): boolean {
  // Locals only (no closure over them), so the numbers stay unboxed and a call allocates nothing but the path.
  let pen = false;
  // The column being accumulated: its x, and the first, lowest, highest and last y in it.
  let colX = 0;
  let inY = 0;
  let minY = 0;
  let maxY = 0;
  let outY = 0;
  let inside = true;
  for (let i = i0; i <= i1; i++) {
    const v = ys[i];
    // No sample at this x: undefined, or NaN in an encoded column.
    if (v === undefined || Number.isNaN(v as number)) continue;
    if (v === null || v === GAP) {
      if (pen) closeColumn(sink, colX, inY, minY, maxY, outY);
      pen = false;
      continue;
    }
    const x = Math.round(m.x0 + m.kx * xs[i]!);
    const y = Math.round(m.y0 + m.ky * v);
    if (x < box.left || x > box.right || y < box.top || y > box.bottom) inside = false;
    if (pen && x === colX) {
      if (y < minY) minY = y;
      else if (y > maxY) maxY = y;
      outY = y;
      continue;
    }
    if (pen) {
      closeColumn(sink, colX, inY, minY, maxY, outY);
      sink.lineTo(x, y);
    } else {
      sink.moveTo(x, y);
      pen = true;
    }
    colX = x;
    inY = minY = maxY = outY = y;
  }
  if (pen) closeColumn(sink, colX, inY, minY, maxY, outY);
  return inside;
}

/** The rest of a pixel column after its first point (drawn already): its lowest, highest and last point. */
function closeColumn(sink: PathSink, x: number, inY: number, minY: number, maxY: number, outY: number): void {
  if (minY === maxY) return;
  if (inY !== minY && outY !== minY) sink.lineTo(x, minY);
  if (inY !== maxY && outY !== maxY) sink.lineTo(x, maxY);
  sink.lineTo(x, outY);
}

/**
 * uPlot's columns ([xs, ...ys]) as one Float64Array of `columns.length` runs of `columns[0].length` cells, a gap
 * (null) as GAP and no sample (undefined) as NaN, written into `into` when it is large enough (the chart keeps one
 * across ticks) and returned.
 */
export function encodeColumns(columns: readonly ArrayLike<number | null | undefined>[], into: Float64Array | null): Float64Array {
  const length = columns[0]?.length ?? 0;
  const size = length * columns.length;
  const out = into && into.length >= size ? into : new Float64Array(Math.max(size, Math.ceil(size * 1.25)));
  let k = 0;
  for (const col of columns) {
    for (let i = 0; i < length; i++) {
      const v = col[i];
      out[k++] = v === null ? GAP : v === undefined ? Number.NaN : v;
    }
  }
  return out;
}
