/** Helpers for editing a dashboard spec as JSON text. Pure. */

export type ParsedSpec = { ok: true; value: unknown } | { ok: false; message: string };

/** Parses JSON and turns the engine's error into "line L, column C: …" where it can. */
export function parseSpecText(text: string): ParsedSpec {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    // Engines differ: V8 says "at position N" (or quotes the text), Firefox "at line L column C".
    const pos = /position (\d+)/.exec(msg);
    const lc = /line (\d+) column (\d+)/.exec(msg);
    if (pos) {
      const at = Number(pos[1]);
      const before = text.slice(0, at);
      const line = before.split("\n").length;
      const column = at - before.lastIndexOf("\n");
      return { ok: false, message: `Invalid JSON at line ${line}, column ${column}: ${msg.replace(/ in JSON at position \d+.*$/s, "")}` };
    }
    if (lc)
      return {
        ok: false,
        message: `Invalid JSON at line ${lc[1]}, column ${lc[2]}: ${msg.replace(/^JSON\.parse: /, "").replace(/ at line \d+ column \d+.*$/s, "")}`,
      };
    return {
      ok: false,
      message: `Invalid JSON: ${msg
        .replace(/, ".*" is not valid JSON$/s, "")
        .replace(/\s+/g, " ")
        .slice(0, 200)}`,
    };
  }
}

/** Quick shape checks before a round trip; the server's zod schema remains the authority. */
export function specProblems(value: unknown): string[] {
  const out: string[] = [];
  if (!value || typeof value !== "object" || Array.isArray(value)) return ["The spec must be a JSON object."];
  const v = value as Record<string, unknown>;
  if (typeof v.title !== "string" || v.title.trim() === "") out.push("title: a non-empty string is required.");
  const time = v.time as Record<string, unknown> | undefined;
  if (!time || typeof time.from !== "string" || typeof time.to !== "string") out.push('time: {"from": …, "to": …} is required.');
  if (!Array.isArray(v.panels)) out.push("panels: an array is required.");
  else {
    const ids = new Set<string>();
    v.panels.forEach((p, i) => {
      const panel = p as Record<string, unknown>;
      if (!panel || typeof panel !== "object") {
        out.push(`panels[${i}]: must be an object.`);
        return;
      }
      if (typeof panel.id !== "string" || !/^[A-Za-z0-9_-]+$/.test(panel.id))
        out.push(`panels[${i}].id: letters, digits, _ or - required.`);
      else if (ids.has(panel.id)) out.push(`panels[${i}].id: duplicate id ${panel.id}.`);
      else ids.add(panel.id);
      if (!["timeseries", "stat", "table", "bar"].includes(String(panel.type)))
        out.push(`panels[${i}].type: one of timeseries, stat, table, bar.`);
      if (typeof panel.sql !== "string" || panel.sql.trim() === "") out.push(`panels[${i}].sql: required.`);
      if (typeof panel.sourceId !== "string" || panel.sourceId === "") out.push(`panels[${i}].sourceId: required.`);
    });
  }
  return out;
}

const SPEC_KEYS = ["title", "refreshIntervalMs", "time", "panels"];
const PANEL_KEYS = ["id", "title", "type", "sourceId", "unit", "options", "sql"];

function ordered(obj: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) if (k in obj) out[k] = obj[k];
  for (const k of Object.keys(obj)) if (!(k in out)) out[k] = obj[k];
  return out;
}

/**
 * The spec as the editor shows it: keys in reading order (the config store's jsonb sorts them by
 * length), SQL last in each panel, unknown keys kept at the end, two-space indentation.
 */
export function formatSpec(spec: unknown): string {
  if (!spec || typeof spec !== "object" || Array.isArray(spec)) return JSON.stringify(spec, null, 2);
  const s = ordered(spec as Record<string, unknown>, SPEC_KEYS);
  if (s.time && typeof s.time === "object" && !Array.isArray(s.time)) s.time = ordered(s.time as Record<string, unknown>, ["from", "to"]);
  if (Array.isArray(s.panels)) {
    s.panels = s.panels.map((p) =>
      p && typeof p === "object" && !Array.isArray(p) ? ordered(p as Record<string, unknown>, PANEL_KEYS) : p,
    );
  }
  return JSON.stringify(s, null, 2);
}

/** A panel id not yet used: panel_1, panel_2, … */
export function freshPanelId(existing: readonly string[]): string {
  for (let i = 1; ; i++) if (!existing.includes(`panel_${i}`)) return `panel_${i}`;
}
