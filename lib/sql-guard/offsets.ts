// Offsets between the SQL as written and the SQL the parser saw. PostgreSQL reports locations as byte
// offsets into the UTF-8 text it parsed, which is the macro expansion (`$__timeFilter(ts)` became
// `(ts BETWEEN $1 AND $2)`); an editor underlines by UTF-16 offsets into the text as written.

/** The UTF-16 offset of UTF-8 byte offset `byte` of `text` (clamped to the text; a split character maps to its start). */
export function charOffsetOfByte(text: string, byte: number): number {
  if (byte <= 0) return 0;
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < text.length;
    const size = c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3;
    if (bytes + size > byte) return i;
    bytes += size;
    if (pair) i++;
    if (bytes === byte) return i + 1;
  }
  return text.length;
}

/**
 * Maps an offset into `expanded` (the expansion of `written`) back to `written`. Text outside macros is
 * copied verbatim by the expansion, and every macro starts at a `$` the macro lexer reports (`dollars`):
 * the expansion of the prefix before such a `$` is exactly the expanded text before that macro's output.
 * So an offset in a verbatim stretch maps to the same character of `written`; one inside a macro's output
 * maps conservatively to the `$` that starts the macro. `expand` expands a prefix (null when that prefix
 * does not expand, e.g. it ends inside a macro's argument list).
 */
export function writtenOffset(
  written: string,
  expanded: string,
  offset: number,
  dollars: readonly number[],
  expand: (prefix: string) => string | null,
): number {
  // Anchors: (position in written, position in expanded) pairs where both texts are in step.
  const anchors: Array<[number, number]> = [[0, 0]];
  for (const d of dollars) {
    const e = expand(written.slice(0, d));
    if (e !== null) anchors.push([d, e.length]);
  }
  anchors.push([written.length, expanded.length]);
  for (let k = 1; k < anchors.length; k++) {
    const [w, e] = anchors[k];
    if (offset > e) continue;
    // The stretch before anchor k ends verbatim; it is verbatim back to where `written` and `expanded` differ.
    const back = e - offset;
    const candidate = w - back;
    const [prevW] = anchors[k - 1];
    if (candidate >= prevW && written.slice(candidate, w) === expanded.slice(offset, e)) {
      // Inside the previous macro's text (its written form and its output can share a suffix, e.g. `)`)?
      // Either way the character is the one written there.
      return candidate;
    }
    return prevW;
  }
  return written.length;
}
