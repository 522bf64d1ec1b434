import { z } from "zod";
import { PANEL_TYPES } from "../dashboards/spec.ts";
import { AppError } from "../http/errors.ts";
import { type Source, catalogStatus } from "../sources/index.ts";
import type { GenerationLog } from "./generation-log.ts";
import { ModelCallError, type ModelCallDeps, type TokenUsage, generateStructured } from "./invoke.ts";
import { selectCatalog } from "./prompt.ts";

/** The model's draft of a source's notes, table by table. */
export const SourceDraftSchema = z.object({
  summary: z.string().max(2000),
  tables: z
    .array(
      z.object({
        table: z.string().max(200),
        description: z.string().max(1000),
        timeColumn: z.string().max(63).nullable().optional(),
        units: z
          .array(z.object({ column: z.string().max(63), unit: z.string().max(32) }))
          .max(50)
          .optional(),
        suggestedPanels: z
          .array(z.object({ title: z.string().max(200), type: z.enum(PANEL_TYPES), description: z.string().max(500) }))
          .max(10)
          .optional(),
      }),
    )
    .max(500),
});
export type SourceDraft = z.infer<typeof SourceDraftSchema>;

/** The draft for review: structured, and rendered as the Markdown an admin edits and saves as the source's notes. */
export interface SourceDraftResult {
  draft: SourceDraft;
  notes: string;
  warnings: string[];
  catalog: { tablesTotal: number; tablesIncluded: number; omittedTables: string[] };
  model: string;
  usage: TokenUsage;
}

export interface SourceDraftDeps {
  model: ModelCallDeps;
  generationLog: GenerationLog;
  config: { CATALOG_STALE_AFTER_DAYS: number };
  now: () => number;
  maxCatalogChars?: number;
}

/** Longest notes text a draft produces (the admin may edit it down or up before saving). */
export const MAX_DRAFT_NOTES_CHARS = 20_000;

const SYSTEM = [
  "You document PostgreSQL metrics databases for dashboard authors. From the catalog below, write notes as one JSON object:",
  '{"summary": string, "tables": [{"table": "schema.name", "description": string, "timeColumn": string|null, "units": [{"column": string, "unit": string}], "suggestedPanels": [{"title": string, "type": "timeseries"|"stat"|"table"|"bar", "description": string}]}]}.',
  "Describe what each table holds, which column is its time column, the unit of numeric columns when the name or type makes it clear (ms, bytes, %, requests), and 1 to 3 useful panels.",
  "Do not invent tables or columns. Keep descriptions short.",
].join("\n");

/** Drafts notes for a source from its catalog (and current notes); nothing is saved here. */
export async function draftSourceNotes(
  deps: SourceDraftDeps,
  input: { workspaceId: string; userSub: string; source: Source; instructions?: string },
): Promise<SourceDraftResult> {
  const { source } = input;
  const status = catalogStatus(source, deps.config.CATALOG_STALE_AFTER_DAYS, deps.now());
  if (status === "never_refreshed" || !source.catalog) {
    throw new AppError(
      "catalog_missing",
      `The catalog of source "${source.name}" was never refreshed, so there is nothing to describe. Refresh the catalog first.`,
      { sourceId: source.id },
    );
  }
  const warnings: string[] = [];
  if (status === "stale") warnings.push(`The catalog of source "${source.name}" is stale; refresh it if tables changed.`);
  const selection = selectCatalog(source.catalog, {
    question: input.instructions ?? "",
    notes: source.notes,
    maxChars: deps.maxCatalogChars ?? 24_000,
  });
  if (selection.tablesIncluded < selection.tablesTotal) {
    warnings.push(`The catalog is large: the draft covers ${selection.tablesIncluded} of ${selection.tablesTotal} tables.`);
  }
  const scope = { route: "source_draft" as const, workspaceId: input.workspaceId, userSub: input.userSub };
  const prompt = `Source "${source.name}".${input.instructions ? `\nAdmin's instructions: ${input.instructions}` : ""}\n\n${selection.text}`;
  const logBase = {
    workspaceId: input.workspaceId,
    userSub: input.userSub,
    route: "source_draft" as const,
    prompt: input.instructions ? `Draft notes for source ${source.id}: ${input.instructions}` : `Draft notes for source ${source.id}`,
    model: deps.model.provider.modelId,
  };
  let out: { value: SourceDraft; usage: TokenUsage };
  try {
    out = await generateStructured(deps.model, scope, {
      system: SYSTEM,
      prompt,
      schema: SourceDraftSchema,
      name: "source_notes",
      description: "Notes describing the source's tables",
    });
  } catch (err) {
    if (err instanceof ModelCallError) {
      await deps.generationLog.write({
        ...logBase,
        result: { sourceId: source.id, error: err.code },
        inputTokens: err.usage.input,
        outputTokens: err.usage.output,
        outcome: err.outcome,
      });
    }
    throw err;
  }

  // Tables the model made up are dropped: notes feed later generations and must not mislead them.
  const known = new Map(source.catalog.tables.map((t) => [`${t.schema}.${t.name}`.toLowerCase(), t]));
  const byBareName = new Map(source.catalog.tables.map((t) => [t.name.toLowerCase(), t]));
  const invented: string[] = [];
  const tables = out.value.tables.flatMap((t) => {
    const match = known.get(t.table.toLowerCase()) ?? byBareName.get(t.table.toLowerCase());
    if (!match) {
      invented.push(t.table);
      return [];
    }
    const columns = new Set(match.columns.map((c) => c.name));
    return [
      {
        ...t,
        table: `${match.schema}.${match.name}`,
        timeColumn: t.timeColumn && columns.has(t.timeColumn) ? t.timeColumn : match.timeColumn,
        units: t.units?.filter((u) => columns.has(u.column)),
      },
    ];
  });
  if (invented.length > 0) warnings.push(`Left out tables that are not in the catalog: ${invented.slice(0, 20).join(", ")}.`);
  const draft: SourceDraft = { summary: out.value.summary, tables };
  const notes = renderNotes(draft);
  const result: SourceDraftResult = {
    draft,
    notes,
    warnings,
    catalog: { tablesTotal: selection.tablesTotal, tablesIncluded: selection.tablesIncluded, omittedTables: selection.omittedTables },
    model: deps.model.provider.modelId,
    usage: out.usage,
  };
  await deps.generationLog.write({
    ...logBase,
    result: { sourceId: source.id, notes },
    inputTokens: out.usage.input,
    outputTokens: out.usage.output,
    outcome: "ok",
  });
  return result;
}

/** Renders a draft as the Markdown notes text stored in sources.notes. */
export function renderNotes(draft: SourceDraft): string {
  const lines: string[] = [draft.summary.trim(), ""];
  for (const t of draft.tables) {
    lines.push(`## ${t.table}`, t.description.trim());
    lines.push(`Time column: ${t.timeColumn ?? "none"}`);
    if (t.units?.length) lines.push(`Units: ${t.units.map((u) => `${u.column} (${u.unit})`).join(", ")}`);
    if (t.suggestedPanels?.length) {
      lines.push("Suggested panels:");
      for (const p of t.suggestedPanels) lines.push(`- ${p.title} (${p.type}): ${p.description}`);
    }
    lines.push("");
  }
  const text = lines.join("\n").trim();
  return text.length > MAX_DRAFT_NOTES_CHARS ? `${text.slice(0, MAX_DRAFT_NOTES_CHARS)}\n… (truncated)` : text;
}
