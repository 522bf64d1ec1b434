// PostgreSQL reports locations as byte offsets into the UTF-8 text it parsed; JavaScript strings and an
// editor count UTF-16 code units. (The expansion maps its own offsets back to the text as written.)

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
