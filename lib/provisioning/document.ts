import { dirname, resolve } from "node:path";
import { parse as parseYaml, YAMLParseError } from "yaml";
import { z } from "zod";
import { defaultOf } from "../config/variables.ts";
import { newDashboardSpecSchema } from "../dashboards/spec.ts";
import { AppError } from "../http/errors.ts";
import { SourceInputSchema } from "../sources/store.ts";
import { WorkspaceGroupsSchema, WorkspaceIdSchema, WorkspaceNameSchema } from "../workspaces/store.ts";
import { claimTextProblem } from "../oidc/claims.ts";
import { type ReadBudget, readBoundedText, readBudget } from "./read-file.ts";

/**
 * The provisioning document (docs/provisioning.md): workspaces with their role groups, their sources (by
 * secret_ref, never credentials) and their dashboards as code, plus an explicit delete list. Every entity carries a
 * stable id chosen in the file, so applying it again updates instead of duplicating. Sources and dashboards are
 * validated by the API's own schemas (lib/sources SourceInputSchema, lib/dashboard newDashboardSpecSchema).
 */

/** A source id chosen in a provisioning file: `src_` and up to 60 letters, digits, `_` or `-`. */
export const SourceIdSchema = z
  .string()
  .regex(/^src_[A-Za-z0-9_-]{1,60}$/, { error: "must be src_ followed by 1 to 60 letters, digits, _ or -" });

/** A dashboard id chosen in a provisioning file: `db_` and up to 60 letters, digits, `_` or `-`. */
export const DashboardIdSchema = z
  .string()
  .regex(/^db_[A-Za-z0-9_-]{1,60}$/, { error: "must be db_ followed by 1 to 60 letters, digits, _ or -" });

/** What the dashboard schema needs from configuration (the API applies the same values). */
export interface DocumentOptions {
  minRefreshIntervalMs: number;
  defaultTime: { from: string; to: string };
}

/**
 * The options the configuration's defaults give (MIN_REFRESH_INTERVAL_MS, DEFAULT_TIME_FROM / _TO): for checking a
 * document where no configuration is loaded, such as `cdk synth`; the applying process checks it again with its own.
 */
export function defaultDocumentOptions(): DocumentOptions {
  return {
    minRefreshIntervalMs: defaultOf("MIN_REFRESH_INTERVAL_MS"),
    defaultTime: { from: defaultOf("DEFAULT_TIME_FROM"), to: defaultOf("DEFAULT_TIME_TO") },
  };
}

// Notes (which the AI source draft may write) and time-column overrides are managed only when the file names them;
// every other field is the file's, with the API's defaults.
const SourceEntrySchema = SourceInputSchema.omit({ notes: true, timeColumnOverrides: true })
  .extend({
    id: SourceIdSchema,
    notes: SourceInputSchema.shape.notes.unwrap().optional(),
    timeColumnOverrides: SourceInputSchema.shape.timeColumnOverrides.unwrap().optional(),
  })
  .strict();

function documentSchema(opts: DocumentOptions) {
  const DashboardEntrySchema = z
    .object({
      id: DashboardIdSchema,
      spec: newDashboardSpecSchema(opts.minRefreshIntervalMs, opts.defaultTime),
    })
    .strict();
  const WorkspaceEntrySchema = z
    .object({
      id: WorkspaceIdSchema,
      name: WorkspaceNameSchema,
      groups: WorkspaceGroupsSchema.strict(),
      sources: z.array(SourceEntrySchema).max(1000).default([]),
      dashboards: z.array(DashboardEntrySchema).max(10_000).default([]),
    })
    .strict();
  const DeleteSchema = z
    .object({
      workspaces: z
        .array(z.union([WorkspaceIdSchema, z.object({ id: WorkspaceIdSchema, force: z.boolean().default(false) }).strict()]))
        .default([]),
      sources: z.array(SourceIdSchema).default([]),
      dashboards: z.array(DashboardIdSchema).default([]),
    })
    .strict();
  return z
    .object({
      apiVersion: z.literal(1).default(1),
      workspaces: z.array(WorkspaceEntrySchema).max(1000).default([]),
      delete: DeleteSchema.default({ workspaces: [], sources: [], dashboards: [] }),
    })
    .strict()
    .superRefine((doc, ctx) => {
      const declared = new Map<string, string>();
      const declare = (id: string, path: (string | number)[]) => {
        if (declared.has(id)) ctx.addIssue({ code: "custom", path, message: `${id} is declared twice` });
        declared.set(id, path.slice(0, 2).join("."));
      };
      doc.workspaces.forEach((ws, w) => {
        declare(ws.id, ["workspaces", w, "id"]);
        const own = new Set(ws.sources.map((s) => s.id));
        ws.sources.forEach((s, i) => {
          declare(s.id, ["workspaces", w, "sources", i, "id"]);
        });
        ws.dashboards.forEach((d, i) => {
          declare(d.id, ["workspaces", w, "dashboards", i, "id"]);
          // A panel or query variable reads a source of its own workspace: declared here, or one that already exists there.
          const readers = [
            ...d.spec.panels.map((p, j) => ({ sourceId: p.sourceId, at: ["panels", j], what: "a panel" })),
            ...(d.spec.variables ?? []).map((v, j) => ({ sourceId: v.sourceId, at: ["variables", j], what: "a variable" })),
          ];
          for (const r of readers) {
            if (r.sourceId === undefined) continue;
            const elsewhere = doc.workspaces.some((other) => other.id !== ws.id && other.sources.some((s) => s.id === r.sourceId));
            if (elsewhere && !own.has(r.sourceId)) {
              ctx.addIssue({
                code: "custom",
                path: ["workspaces", w, "dashboards", i, "spec", ...r.at, "sourceId"],
                message: `${r.sourceId} is a source of another workspace; ${r.what} reads only its own workspace's sources`,
              });
            }
          }
        });
      });
      const deleted = [
        ...doc.delete.workspaces.map((e, i) => [typeof e === "string" ? e : e.id, ["delete", "workspaces", i]] as const),
        ...doc.delete.sources.map((id, i) => [id, ["delete", "sources", i]] as const),
        ...doc.delete.dashboards.map((id, i) => [id, ["delete", "dashboards", i]] as const),
      ];
      for (const [id, path] of deleted) {
        if (declared.has(id)) ctx.addIssue({ code: "custom", path: [...path], message: `${id} is both declared and listed under delete` });
      }
    });
}

export type ProvisioningDocument = z.output<ReturnType<typeof documentSchema>>;
export type WorkspaceEntry = ProvisioningDocument["workspaces"][number];
export type SourceEntry = WorkspaceEntry["sources"][number];
export type DashboardEntry = WorkspaceEntry["dashboards"][number];

/**
 * Names a zod issue path after the ids in the document where it can: `workspaces[ws_shop].dashboards[db_x].spec.title`
 * rather than `workspaces.0.dashboards.3.spec.title`.
 */
function describePath(raw: unknown, path: readonly PropertyKey[]): string {
  let node: unknown = raw;
  let out = "";
  for (const key of path) {
    const next = node && typeof node === "object" ? (node as Record<PropertyKey, unknown>)[key] : undefined;
    const id = next && typeof next === "object" && typeof (next as { id?: unknown }).id === "string" ? (next as { id: string }).id : null;
    if (typeof key === "number") out += id ? `[${id}]` : `[${key}]`;
    else out += out ? `.${String(key)}` : String(key);
    node = next;
  }
  return out || "(document)";
}

/**
 * Validates a parsed document (JSON or YAML, with every `specFile` already read). Throws `validation_failed` whose
 * detail lists every problem, one per line, each naming the entity and field.
 */
export function parseProvisioningDocument(raw: unknown, opts: DocumentOptions): ProvisioningDocument {
  if (raw === null || raw === undefined) throw new AppError("validation_failed", "The provisioning document is empty.");
  const parsed = documentSchema(opts).safeParse(raw);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => ({ path: describePath(raw, i.path), message: i.message }));
  throw new AppError(
    "validation_failed",
    `The provisioning document is invalid:\n${issues.map((i) => `  ${i.path}: ${i.message}`).join("\n")}`,
    {
      issues,
    },
  );
}

/**
 * Parses the text of a provisioning file: YAML, of which JSON is a subset. `name` is only used in errors. Text of
 * `maxBytes` (PROVISION_FILE_MAX_BYTES) or more UTF-8 bytes is refused before parsing, and so is a NUL character or
 * ill-formed Unicode in any key or value, also when written as an escape (`"\0"`, `"\u0000"`, `"\ud800"`), by where
 * it is: the config store cannot store a NUL, and would store a lone surrogate as U+FFFD.
 */
export function parseProvisioningText(text: string, name: string, maxBytes: number = defaultOf("PROVISION_FILE_MAX_BYTES")): unknown {
  if (Buffer.byteLength(text, "utf8") > maxBytes) {
    throw new AppError(
      "validation_failed",
      `${name}: larger than PROVISION_FILE_MAX_BYTES (${maxBytes} bytes). Split the workspaces over several files, or raise PROVISION_FILE_MAX_BYTES.`,
      { limit: "PROVISION_FILE_MAX_BYTES", maxBytes },
    );
  }
  let raw: unknown;
  try {
    raw = parseYaml(text, { prettyErrors: true, maxAliasCount: 100 });
  } catch (err) {
    if (err instanceof YAMLParseError) {
      const at = err.linePos?.[0];
      throw new AppError("validation_failed", `${name}${at ? ` line ${at.line}, column ${at.col}` : ""}: ${err.message.split("\n")[0]}`);
    }
    throw err;
  }
  refuseBadText(raw, name);
  return raw;
}

/** Walks the parsed document (iteratively: its depth is the file's) and refuses the first text the store cannot keep. */
function refuseBadText(raw: unknown, name: string): void {
  const seen = new Set<object>();
  const stack: { node: unknown; path: PropertyKey[] }[] = [{ node: raw, path: [] }];
  while (stack.length > 0) {
    const { node, path } = stack.pop()!;
    if (typeof node === "string") {
      const problem = claimTextProblem(node);
      if (problem) throw badText(raw, name, path, problem, "value");
      continue;
    }
    if (!node || typeof node !== "object" || seen.has(node)) continue;
    seen.add(node);
    const entries: [PropertyKey, unknown][] = Array.isArray(node) ? node.map((v, i) => [i, v]) : Object.entries(node);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, value] = entries[i]!;
      const keyProblem = typeof key === "string" ? claimTextProblem(key) : null;
      if (keyProblem) throw badText(raw, name, path, keyProblem, "key");
      stack.push({ node: value, path: [...path, key] });
    }
  }
}

function badText(raw: unknown, name: string, path: readonly PropertyKey[], problem: string, what: "key" | "value"): AppError {
  const where = describePath(raw, path);
  return new AppError(
    "validation_failed",
    what === "key"
      ? `${name}: a key of ${where} contains ${problem}; provisioning text must not.`
      : `${name}: ${where} contains ${problem}; provisioning text must not.`,
    { path: where },
  );
}

/**
 * Reads a provisioning file and every dashboard `specFile` it names (a path relative to the file: a dashboard spec,
 * or a saved `GET /api/dashboards/:id` response, whose `spec` is used), and returns the document with the specs inline,
 * not yet validated (so it can be carried elsewhere as JSON, e.g. PROVISION_DOCUMENT, and validated there).
 */
export async function readProvisioningFile(path: string, opts: { maxBytes?: number } = {}): Promise<unknown> {
  // One budget for the file and its specFiles (PROVISION_FILE_MAX_BYTES): each is read bounded by what is left.
  const budget: ReadBudget = readBudget(opts.maxBytes ?? defaultOf("PROVISION_FILE_MAX_BYTES"));
  const raw = parseProvisioningText(await readBoundedText(path, path, budget), path, budget.max);
  const base = dirname(resolve(path));
  const workspaces = raw && typeof raw === "object" ? (raw as { workspaces?: unknown }).workspaces : undefined;
  if (!Array.isArray(workspaces)) return raw;
  for (const ws of workspaces) {
    const dashboards = ws && typeof ws === "object" ? (ws as { dashboards?: unknown }).dashboards : undefined;
    if (!Array.isArray(dashboards)) continue;
    for (const d of dashboards) {
      if (!d || typeof d !== "object" || !("specFile" in d)) continue;
      const entry = d as { id?: unknown; spec?: unknown; specFile?: unknown };
      const label = `dashboard ${typeof entry.id === "string" ? entry.id : "(no id)"}`;
      if (typeof entry.specFile !== "string" || entry.specFile === "")
        throw new AppError("validation_failed", `${label}: specFile must be a path`);
      if (entry.spec !== undefined) throw new AppError("validation_failed", `${label}: give spec or specFile, not both`);
      const file = resolve(base, entry.specFile);
      const loaded = parseProvisioningText(
        await readBoundedText(file, `${label}: specFile ${entry.specFile}`, budget),
        `${label}: specFile ${entry.specFile}`,
        budget.max,
      );
      // A saved API response ({id, version, spec, ...}) works as well as a bare spec.
      const isResponse = loaded && typeof loaded === "object" && "spec" in loaded && !("panels" in loaded);
      entry.spec = isResponse ? (loaded as { spec: unknown }).spec : loaded;
      delete entry.specFile;
    }
  }
  return raw;
}

/** Reads and validates a provisioning file (see readProvisioningFile and parseProvisioningDocument). */
export async function loadProvisioningFile(path: string, opts: DocumentOptions & { maxBytes?: number }): Promise<ProvisioningDocument> {
  return parseProvisioningDocument(await readProvisioningFile(path, { maxBytes: opts.maxBytes }), opts);
}
