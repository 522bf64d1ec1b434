/** Axis helpers for the SVG charts: nice linear ticks and calendar-friendly time ticks. Pure. */

/** About `count` round ticks covering [min, max], e.g. 0, 20, 40, 60 for 3..57. */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [];
  if (min === max) {
    const pad = Math.abs(min) > 0 ? Math.abs(min) * 0.1 : 1;
    min -= pad;
    max += pad;
  }
  if (min > max) [min, max] = [max, min];
  const raw = (max - min) / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const start = Math.floor(min / step) * step;
  const end = Math.ceil(max / step) * step;
  const ticks: number[] = [];
  for (let v = start; v <= end + step / 2; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

/** The value domain of a chart: includes 0 for non-negative data so bars and areas are honest. */
export function valueDomain(values: readonly number[]): [number, number] {
  if (values.length === 0) return [0, 1];
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (lo >= 0) lo = 0;
  if (hi <= 0 && lo < 0) hi = 0;
  if (lo === hi) hi = lo + 1;
  const ticks = niceTicks(lo, hi, 4);
  return [ticks[0], ticks[ticks.length - 1]];
}

const STEPS = [
  1_000, 5_000, 15_000, 30_000, 60_000, 300_000, 900_000, 1_800_000, 3_600_000, 10_800_000, 21_600_000, 43_200_000, 86_400_000, 604_800_000,
  2_592_000_000,
];

/** Time ticks at a round step (1 s … 30 d) such that about `count` fit in [from, to]. */
export function timeTicks(from: number, to: number, count = 6): number[] {
  if (!(to > from)) return [];
  const raw = (to - from) / Math.max(1, count);
  const step = STEPS.find((s) => s >= raw) ?? STEPS[STEPS.length - 1];
  const ticks: number[] = [];
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) ticks.push(t);
  return ticks;
}

/** Maps a domain linearly onto a pixel range. */
export function linear(domain: readonly [number, number], range: readonly [number, number]): (v: number) => number {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  const k = d1 === d0 ? 0 : (r1 - r0) / (d1 - d0);
  return (v) => r0 + (v - d0) * k;
}
