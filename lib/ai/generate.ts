import { z } from "zod";
import type { Catalog } from "../catalog/types.ts";
import {
  type DashboardSpec,
  DashboardSpecBaseSchema,
  PanelSchema,
  TimeExpressionSchema,
  type Variable,
  VariableSchema,
  dashboardSpecSchema,
} from "../dashboards/spec.ts";
import type { Guard } from "../sql-guard/verdict.ts";
import { AppError } from "../http/errors.ts";
import { type Source, catalogStatus, catalogVersion } from "../sources/index.ts";
import type { GenerationLog } from "./generation-log.ts";
import { ModelCallError, type ModelCallDeps, type TokenUsage, generateStructured } from "./invoke.ts";
import { SQL_RULES, selectCatalog } from "./prompt.ts";

/** A panel as the model writes it: the source is ours to set, not the model's. */
export const GeneratedPanelSchema = PanelSchema.omit({ sourceId: true });

/** A variable as the model writes it: a query variable reads the generation's source, which is ours to set. */
export const GeneratedVariableSchema = VariableSchema.omit({ sourceId: true });

/** What the model returns for a generation (validated, then completed into a DashboardSpec). */
export const GeneratedSpecSchema = z.object({
  title: DashboardSpecBaseSchema.shape.title,
  refreshIntervalMs: z.number().int().positive().optional(),
  time: z.object({ from: TimeExpressionSchema, to: TimeExpressionSchema }).optional(),
  variables: z.array(GeneratedVariableSchema).max(20).optional(),
  panels: z.array(GeneratedPanelSchema).max(50),
});

/** What the model returns in the repair round: corrected versions of the refused panels. */
export const RepairSchema = z.object({ panels: z.array(GeneratedPanelSchema).max(50) });

/** A panel the guard still refused after the repair round; dropped from the spec. */
export interface DroppedPanel {
  panelId: string;
  title: string;
  sql: string;
  reason: string;
  message: string;
}

/** The generation result, for the user to review and save through the dashboards API. */
export interface GenerationResult {
  spec: DashboardSpec;
  dropped: DroppedPanel[];
  /** Panels the guard refused at first and accepted after the repair round. */
  repaired: string[];
  warnings: string[];
  catalog: { status: "fresh" | "stale"; tablesTotal: number; tablesIncluded: number; omittedTables: string[] };
  model: string;
  usage: TokenUsage;
}

export interface GenerateDeps {
  model: ModelCallDeps;
  guard: Guard;
  generationLog: GenerationLog;
  config: {
    MIN_REFRESH_INTERVAL_MS: number;
    DEFAULT_TIME_FROM: string;
    DEFAULT_TIME_TO: string;
    CATALOG_STALE_AFTER_DAYS: number;
  };
  now: () => number;
  /** Character budget of the catalog part of the prompt. */
  maxCatalogChars?: number;
  /**
   * When the whole request must have been answered, in `now`'s milliseconds (the Lambda function's deadline
   * behind the web adapter). Every model call gets the time left, minus what writing the log row and the
   * response needs; the repair round runs only when it fits. Unset: each call has AI_REQUEST_TIMEOUT_MS.
   */
  deadlineAt?: number;
}

export const DEFAULT_MAX_CATALOG_CHARS = 24_000;
/** Kept back from the request's deadline: writing the generation_log row and sending the answer. */
export const GENERATION_RESERVE_MS = 2_000;
/** A model call with less time than this left is not started. */
export const MIN_MODEL_CALL_MS = 1_000;

/** The 504 of a generation that ran out of the request's time (the generation_log row is written first). */
function outOfTime(leftMs: number, usage: TokenUsage): ModelCallError {
  return new ModelCallError(
    "ai_provider_timeout",
    `The model did not answer within the ${Math.max(0, Math.round(leftMs / 1000))} s this request had left. Try again, or ask for something smaller.`,
    "provider_timeout",
    usage,
  );
}

function system(source: Source, catalogText: string, cfg: GenerateDeps["config"]): string {
  return [
    "You design dashboards for Pulseboard. Answer with one JSON object: a dashboard spec.",
    `Every panel queries the PostgreSQL source "${source.name}" with one SQL statement that follows the rules below.`,
    'Spec shape: {"title": string, "time": {"from": string, "to": string}, "refreshIntervalMs"?: number, "variables"?: [...], "panels": [{"id": string (letters, digits, _ or -, unique), "title": string, "type": "timeseries"|"stat"|"table"|"bar", "sql": string, "unit"?: string}]}.',
    'Variables (only when the request asks to pick a service, host, etc.): {"name": string (letters, digits, _), "label"?: string, "type": "custom", "values": [string, ...]} or {"name", "type": "query", "sql": "SELECT DISTINCT col FROM ... (one text column, same SQL rules)"}, with "default"?: a value, "multi"?: true to pick several, "includeAll"?: true to offer All.',
    `Time expressions: now, now-<n><s|m|h|d|w> or an ISO-8601 instant (default from ${cfg.DEFAULT_TIME_FROM} to ${cfg.DEFAULT_TIME_TO}). refreshIntervalMs is at least ${cfg.MIN_REFRESH_INTERVAL_MS}.`,
    "Use only the tables and columns listed; prefer 2 to 8 panels that answer the request.",
    "",
    SQL_RULES,
    "",
    catalogText,
  ].join("\n");
}

/**
 * Generates a dashboard spec for review: the catalog must have been refreshed (else `catalog_missing`),
 * a stale one only warns; every panel goes through the guard, refused panels go back to the model
 * once with the guard's reasons, and what is still refused is dropped and reported. Writes one
 * generation_log row, also when the model call fails.
 */
export async function generateDashboard(
  deps: GenerateDeps,
  input: { workspaceId: string; userSub: string; prompt: string; source: Source },
): Promise<GenerationResult> {
  const { source } = input;
  const status = catalogStatus(source, deps.config.CATALOG_STALE_AFTER_DAYS, deps.now());
  if (status === "never_refreshed" || !source.catalog) {
    throw new AppError(
      "catalog_missing",
      `The catalog of source "${source.name}" was never refreshed, so there is nothing to generate from. Refresh the catalog first (POST /api/sources/${source.id}/catalog/refresh or the Refresh button on the sources page).`,
      { sourceId: source.id },
    );
  }
  const catalog: Catalog = source.catalog;
  const freshness: "fresh" | "stale" = status;
  const warnings: string[] = [];
  if (status === "stale") {
    warnings.push(
      `The catalog of source "${source.name}" was last refreshed on ${source.catalogRefreshedAt!.toISOString().slice(0, 10)}, more than ${deps.config.CATALOG_STALE_AFTER_DAYS} days ago; refresh it if tables changed.`,
    );
  }
  const selection = selectCatalog(catalog, {
    question: input.prompt,
    notes: source.notes,
    maxChars: deps.maxCatalogChars ?? DEFAULT_MAX_CATALOG_CHARS,
  });
  if (selection.omittedTables.length > 0 || selection.tablesIncluded < selection.tablesTotal) {
    warnings.push(
      `The catalog is large: the model saw the ${selection.tablesIncluded} of ${selection.tablesTotal} tables most relevant to your request. Name a table in the prompt to include it.`,
    );
  }
  if (selection.notesTruncated) warnings.push("The source notes were shortened to fit the prompt.");

  const scope = { route: "generate" as const, workspaceId: input.workspaceId, userSub: input.userSub };
  const sys = system(source, selection.text, deps.config);
  const usage: TokenUsage = { input: 0, output: 0 };
  const add = (u: TokenUsage) => {
    usage.input += u.input;
    usage.output += u.output;
  };
  let logged = false;
  const logFailure = async (err: unknown) => {
    if (err instanceof ModelCallError) {
      add(err.usage);
      logged = true;
      await deps.generationLog.write({
        ...logBase(input, deps),
        result: { sourceId: source.id, error: err.code },
        inputTokens: usage.input,
        outputTokens: usage.output,
        outcome: err.outcome,
      });
    }
  };

  // One deadline for the whole request: each model call gets what is left of it (never more than its own
  // AI_REQUEST_TIMEOUT_MS), so the function never times out with no answer and no log row.
  const left = () => (deps.deadlineAt === undefined ? Number.POSITIVE_INFINITY : deps.deadlineAt - deps.now() - GENERATION_RESERVE_MS);
  const withinDeadline = (): { model: ModelCallDeps; capped: boolean; leftMs: number } => {
    const leftMs = left();
    const capped = leftMs < deps.model.timeoutMs;
    return { model: capped ? { ...deps.model, timeoutMs: Math.max(1, Math.floor(leftMs)) } : deps.model, capped, leftMs };
  };

  let generated: z.infer<typeof GeneratedSpecSchema>;
  const firstCall = withinDeadline();
  const firstStarted = deps.now();
  try {
    if (firstCall.leftMs < MIN_MODEL_CALL_MS) throw outOfTime(firstCall.leftMs, { input: 0, output: 0 });
    const first = await generateStructured(firstCall.model, scope, {
      system: sys,
      prompt: `Request: ${input.prompt}`,
      schema: GeneratedSpecSchema,
      name: "dashboard_spec",
      description: "A Pulseboard dashboard spec",
    });
    add(first.usage);
    generated = first.value;
  } catch (err) {
    // Cut off by the request's deadline rather than the call's own timeout: say so.
    const failure =
      err instanceof ModelCallError && err.code === "ai_provider_timeout" && firstCall.capped
        ? outOfTime(firstCall.leftMs, err.usage)
        : err;
    await logFailure(failure);
    throw failure;
  }
  const firstCallMs = deps.now() - firstStarted;
  try {
    return await afterAnswer(generated, firstCallMs);
  } catch (err) {
    // The model answered and its tokens were charged: whatever failed after that, the row is written once.
    if (!logged) {
      logged = true;
      await deps.generationLog.write({
        ...logBase(input, deps),
        result: { sourceId: source.id, error: err instanceof AppError ? err.code : "internal" },
        inputTokens: usage.input,
        outputTokens: usage.output,
        outcome: "invalid_output",
      });
    }
    throw err;
  }

  async function afterAnswer(generated: z.infer<typeof GeneratedSpecSchema>, firstCallMs: number): Promise<GenerationResult> {
    const version = catalogVersion(source);
    const variables = acceptedVariables(
      generated.variables ?? [],
      source.id,
      (sql) => deps.guard.check(sql, catalog, version),
      warnings,
      deps.config,
    );
    const check = (sql: string) => deps.guard.check(sql, catalog, version, variables);

    let panels = dedupeIds(generated.panels);
    const refusedAtFirst = new Map<string, { reason: string; message: string }>();
    for (const p of panels) {
      const v = check(p.sql);
      if (!v.ok) refusedAtFirst.set(p.id, { reason: v.reason, message: v.message });
    }

    const repaired: string[] = [];
    let stillRefused = new Map(refusedAtFirst);
    // The repair round is a second call of about the first one's length: only when that still fits.
    const repairFits = left() >= Math.max(firstCallMs, MIN_MODEL_CALL_MS);
    if (refusedAtFirst.size > 0 && !repairFits) {
      warnings.push("The repair round was skipped: not enough of this request's time was left; refused panels were dropped.");
    }
    if (refusedAtFirst.size > 0 && repairFits) {
      const refused = panels.filter((p) => refusedAtFirst.has(p.id));
      const list = refused
        .map((p) => {
          const r = refusedAtFirst.get(p.id)!;
          return `- panel "${p.id}" (${p.title}), refused with reason ${r.reason}: ${r.message}\n  SQL: ${p.sql}`;
        })
        .join("\n");
      try {
        const repair = await generateStructured(withinDeadline().model, scope, {
          system: sys,
          prompt: `Request: ${input.prompt}\n\nThe SQL guard refused these panels of your dashboard:\n${list}\n\nReturn {"panels": [...]} with a corrected version of each refused panel, keeping its id. Leave out a panel you cannot fix.`,
          schema: RepairSchema,
          name: "panel_repairs",
          description: "Corrected versions of the refused panels",
        });
        add(repair.usage);
        const fixes = new Map(repair.value.panels.filter((p) => refusedAtFirst.has(p.id)).map((p) => [p.id, p]));
        stillRefused = new Map();
        panels = panels.map((p) => {
          if (!refusedAtFirst.has(p.id)) return p;
          const fix = fixes.get(p.id);
          if (!fix) {
            stillRefused.set(p.id, refusedAtFirst.get(p.id)!);
            return p;
          }
          const v = check(fix.sql);
          if (v.ok) repaired.push(p.id);
          else stillRefused.set(p.id, { reason: v.reason, message: v.message });
          return fix;
        });
      } catch (err) {
        // The first answer is still useful: refused panels are dropped and the user is told why.
        if (err instanceof AppError && (err.code === "rate_limited" || err.code === "over_budget")) {
          warnings.push(`The repair round was skipped (${err.code}); refused panels were dropped.`);
        } else if (err instanceof ModelCallError) {
          add(err.usage);
          warnings.push(`The repair round failed (${err.code}); refused panels were dropped.`);
        } else {
          throw err;
        }
      }
    }

    const dropped: DroppedPanel[] = panels
      .filter((p) => stillRefused.has(p.id))
      .map((p) => ({ panelId: p.id, title: p.title, sql: p.sql, ...stillRefused.get(p.id)! }));
    const kept = panels.filter((p) => !stillRefused.has(p.id));
    if (kept.length === 0) warnings.push("No generated panel passed the SQL guard; try rephrasing the request.");

    const spec = completeSpec(generated, kept, variables, source.id, deps.config);
    const parsed = dashboardSpecSchema(deps.config.MIN_REFRESH_INTERVAL_MS).safeParse(spec);
    if (!parsed.success) {
      const err = new ModelCallError(
        "ai_provider_error",
        "The AI provider returned a dashboard that does not match the dashboard schema.",
        "invalid_output",
        { input: 0, output: 0 },
      );
      await logFailure(err);
      throw err;
    }

    const result: GenerationResult = {
      spec: parsed.data,
      dropped,
      repaired,
      warnings,
      catalog: {
        status: freshness,
        tablesTotal: selection.tablesTotal,
        tablesIncluded: selection.tablesIncluded,
        omittedTables: selection.omittedTables,
      },
      model: deps.model.provider.modelId,
      usage,
    };
    logged = true;
    await deps.generationLog.write({
      ...logBase(input, deps),
      result: { sourceId: source.id, spec: result.spec, dropped, repaired, warnings },
      inputTokens: usage.input,
      outputTokens: usage.output,
      outcome: "ok",
    });
    return result;
  }
}

function logBase(input: { workspaceId: string; userSub: string; prompt: string }, deps: GenerateDeps) {
  return {
    workspaceId: input.workspaceId,
    userSub: input.userSub,
    route: "generate" as const,
    prompt: input.prompt,
    model: deps.model.provider.modelId,
  };
}

/** Panel ids must be unique; a model repeating one gets a numeric suffix rather than a failed generation. */
function dedupeIds<T extends { id: string }>(panels: T[]): T[] {
  const seen = new Set<string>();
  return panels.map((p) => {
    let id = p.id;
    for (let n = 2; seen.has(id); n++) id = `${p.id.slice(0, 60)}-${n}`;
    seen.add(id);
    return id === p.id ? p : { ...p, id };
  });
}

/**
 * The model's variables that stand on their own: a query variable reads the generation's source and its SQL must
 * pass the guard; each must satisfy the spec's rules alone, and names are unique (the first one wins). Whatever is
 * left out is said in a warning; panels that name it are then refused and go to the repair round like others.
 */
function acceptedVariables(
  proposed: z.infer<typeof GeneratedVariableSchema>[],
  sourceId: string,
  check: (sql: string) => ReturnType<GenerateDeps["guard"]["check"]>,
  warnings: string[],
  cfg: GenerateDeps["config"],
): Variable[] {
  const kept: Variable[] = [];
  const alone = dashboardSpecSchema(cfg.MIN_REFRESH_INTERVAL_MS);
  for (const v of proposed) {
    const variable: Variable = v.type === "query" ? { ...v, sourceId } : v;
    const drop = (why: string) => warnings.push(`Variable $${v.name} was left out: ${why}.`);
    if (kept.some((k) => k.name === v.name)) {
      drop("its name was used twice");
      continue;
    }
    const shape = alone.safeParse({ title: "v", time: { from: "now-1h", to: "now" }, panels: [], variables: [variable] });
    if (!shape.success) {
      drop(shape.error.issues[0]?.message ?? "it does not fit the variable schema");
      continue;
    }
    if (variable.type === "query") {
      const verdict = check(variable.sql ?? "");
      if (!verdict.ok) {
        drop(`the SQL guard refused its SQL (${verdict.reason}: ${verdict.message})`);
        continue;
      }
    }
    kept.push(variable);
  }
  return kept;
}

function completeSpec(
  generated: z.infer<typeof GeneratedSpecSchema>,
  panels: z.infer<typeof GeneratedPanelSchema>[],
  variables: Variable[],
  sourceId: string,
  cfg: GenerateDeps["config"],
): DashboardSpec {
  const spec: DashboardSpec = {
    title: generated.title,
    time: generated.time ?? { from: cfg.DEFAULT_TIME_FROM, to: cfg.DEFAULT_TIME_TO },
    panels: panels.map((p) => ({ ...p, sourceId })),
  };
  if (variables.length > 0) spec.variables = variables;
  // A refresh faster than the floor is raised to it rather than failing the whole generation.
  if (generated.refreshIntervalMs !== undefined) {
    spec.refreshIntervalMs = Math.max(generated.refreshIntervalMs, cfg.MIN_REFRESH_INTERVAL_MS);
  }
  return spec;
}
