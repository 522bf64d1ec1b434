/**
 * Stable series colours: a series keeps its colour across reloads, panels and row orders because the colour
 * comes from a hash of its name (FNV-1a) into a palette readable on both themes.
 */

/** Ten hues, each at two lightnesses (light theme, dark theme), all at least 3:1 against their background. */
const PALETTE: readonly [light: string, dark: string][] = [
  ["#2f6fd6", "#6d9cf2"],
  ["#d06a0c", "#f0a04b"],
  ["#23895a", "#4cc28a"],
  ["#c8415a", "#f0768b"],
  ["#7b5cd6", "#a58cf0"],
  ["#15869a", "#4fc6da"],
  ["#9a7000", "#e0c050"],
  ["#c04a96", "#f08cc8"],
  ["#5f6d7c", "#9aa7b6"],
  ["#3f8a1c", "#8ccf5a"],
];

export const PALETTE_SIZE = PALETTE.length;

/** 32-bit FNV-1a of a string. */
export function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The palette slot of a series name. */
export function colorIndex(name: string): number {
  return fnv1a(name) % PALETTE.length;
}

/** The colour of a series name in a theme. */
export function seriesColor(name: string, dark: boolean): string {
  return PALETTE[colorIndex(name)]![dark ? 1 : 0];
}
