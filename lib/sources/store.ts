import type pg from "pg";
import { z } from "zod";
import { type Catalog, CatalogSchema } from "../catalog/types.ts";
import { AppError } from "../http/errors.ts";
import { SECRET_REF_PATTERN } from "../secrets/resolver.ts";
import { newId } from "../store/ids.ts";

type Queryable = pg.Pool | pg.PoolClient;

export const SSL_MODES = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] as const;
export type SslMode = (typeof SSL_MODES)[number];

/** A Postgres-compatible metrics store. Holds a secret_ref, never credentials. */
export interface Source {
  id: string;
  workspaceId: string;
  name: string;
  host: string;
  port: number;
  database: string;
  sslmode: SslMode;
  secretRef: string;
  schemas: string[];
  /** Null until the first successful refresh; a null catalog refuses every query (reason `catalog`). */
  catalog: Catalog | null;
  catalogRefreshedAt: Date | null;
  notes: string;
  /** Applied at every catalog refresh, over the detected time column. Always set on a stored source. */
  timeColumnOverrides?: TimeColumnOverride[];
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

/** A user's choice of a table's time column; `column: null` says the table has none. */
export interface TimeColumnOverride {
  schema: string;
  table: string;
  column: string | null;
}

/** What the UI shows next to a catalog: never refreshed blocks generation, stale only warns. */
export type CatalogStatus = "never_refreshed" | "stale" | "fresh";

const identifier = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[^\s\u0000]+$/, { error: "must not contain whitespace" });

/** Fields an admin supplies when creating a source (validated at the edge and again here). */
export const SourceInputSchema = z.object({
  name: z.string().trim().min(1).max(200),
  host: z
    .string()
    .trim()
    .min(1)
    .max(255)
    .regex(/^[A-Za-z0-9.:_[\]-]+$/, { error: "must be a host name or IP address" }),
  port: z.number().int().min(1).max(65535).default(5432),
  database: identifier,
  sslmode: z.enum(SSL_MODES).default("prefer"),
  secretRef: z.string().regex(SECRET_REF_PATTERN, { error: "must be letters, digits and _ (a SOURCE_SECRET_REFS name)" }),
  schemas: z.array(identifier).min(1).max(50).default(["public"]),
  notes: z.string().max(20_000).default(""),
  timeColumnOverrides: z
    .array(
      z.object({
        schema: identifier,
        table: z.string().min(1).max(63),
        column: z.string().min(1).max(63).nullable(),
      }),
    )
    .max(1000)
    .default([]),
});
export type SourceInput = z.input<typeof SourceInputSchema>;

/** Fields an update may change; the catalog changes only through saveCatalog. */
export const SourcePatchSchema = SourceInputSchema.partial();
export type SourcePatch = z.input<typeof SourcePatchSchema>;

interface Row {
  id: string;
  workspace_id: string;
  name: string;
  host: string;
  port: number;
  database: string;
  sslmode: string;
  secret_ref: string;
  schemas: string[];
  catalog: unknown;
  catalog_refreshed_at: Date | null;
  notes: string;
  time_column_overrides: TimeColumnOverride[] | null;
  version: number;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS =
  "id, workspace_id, name, host, port, database, sslmode, secret_ref, schemas, catalog, catalog_refreshed_at, notes, time_column_overrides, version, created_at, updated_at";

function fromRow(r: Row): Source {
  const parsed = r.catalog == null ? null : CatalogSchema.safeParse(r.catalog);
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    name: r.name,
    host: r.host,
    port: r.port,
    database: r.database,
    sslmode: (SSL_MODES as readonly string[]).includes(r.sslmode) ? (r.sslmode as SslMode) : "prefer",
    secretRef: r.secret_ref,
    schemas: r.schemas,
    // A catalog that does not match the format (hand-edited row) counts as never refreshed: queries are refused.
    catalog: parsed?.success && r.catalog_refreshed_at ? parsed.data : null,
    catalogRefreshedAt: parsed?.success ? r.catalog_refreshed_at : null,
    notes: r.notes,
    timeColumnOverrides: Array.isArray(r.time_column_overrides) ? r.time_column_overrides : [],
    version: r.version,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function validation(error: z.ZodError): AppError {
  const issues = error.issues.map((i) => ({ path: i.path.join("."), message: i.message }));
  return new AppError("validation_failed", `Invalid source: ${issues.map((i) => `${i.path || "body"} ${i.message}`).join("; ")}`, {
    issues,
  });
}

/** One source by id, or null. Callers that act for a workspace use getSourceInWorkspace. */
export async function getSource(db: Queryable, id: string): Promise<Source | null> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM sources WHERE id = $1`, [id]);
  return rows[0] ? fromRow(rows[0]) : null;
}

/** The workspace a source belongs to, or null when there is no such source (reads nothing else, the catalog least). */
export async function getSourceWorkspaceId(db: Queryable, id: string): Promise<string | null> {
  const { rows } = await db.query<{ workspace_id: string }>("SELECT workspace_id FROM sources WHERE id = $1", [id]);
  return rows[0]?.workspace_id ?? null;
}

/** One source of a workspace; a source of another workspace is reported exactly like a missing one. */
export async function getSourceInWorkspace(db: Queryable, workspaceId: string, id: string): Promise<Source | null> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM sources WHERE id = $1 AND workspace_id = $2`, [id, workspaceId]);
  return rows[0] ? fromRow(rows[0]) : null;
}

/** The sources of one workspace, ordered by name. */
export async function listSources(db: Queryable, workspaceId: string): Promise<Source[]> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM sources WHERE workspace_id = $1 ORDER BY lower(name), id`, [workspaceId]);
  return rows.map(fromRow);
}

/** Sources a workspace holds. */
export async function countSources(db: Queryable, workspaceId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM sources WHERE workspace_id = $1", [workspaceId]);
  return rows[0]?.n ?? 0;
}

/** The refusal of a source past SOURCES_PER_WORKSPACE_MAX. */
export function sourceLimitReached(max: number): AppError {
  return new AppError(
    "source_limit_reached",
    `This workspace already has SOURCES_PER_WORKSPACE_MAX (${max}) sources; delete one before adding another.`,
    { limit: max },
  );
}

/**
 * Inserts a source (no catalog yet). Throws `validation_failed` naming every bad field, and with `maxPerWorkspace`
 * `source_limit_reached` when the workspace already holds that many. The count and the insert run in one transaction
 * under a per-workspace lock, so concurrent creates cannot pass the cap together (given a Pool; a client must
 * already be inside a transaction for that).
 */
export async function createSource(
  db: Queryable,
  workspaceId: string,
  input: SourceInput,
  opts: { id?: string; maxPerWorkspace?: number } = {},
): Promise<Source> {
  const parsed = SourceInputSchema.safeParse(input);
  if (!parsed.success) throw validation(parsed.error);
  if (opts.maxPerWorkspace === undefined) return insertSource(db, workspaceId, parsed.data, opts.id);
  const max = opts.maxPerWorkspace;
  const client = "release" in db ? null : await db.connect();
  const q = client ?? db;
  try {
    if (client) await client.query("BEGIN");
    await q.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`sources:${workspaceId}`]);
    if ((await countSources(q, workspaceId)) >= max) throw sourceLimitReached(max);
    const source = await insertSource(q, workspaceId, parsed.data, opts.id);
    if (client) await client.query("COMMIT");
    return source;
  } catch (err) {
    if (client) await client.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    client?.release();
  }
}

async function insertSource(
  db: Queryable,
  workspaceId: string,
  s: z.output<typeof SourceInputSchema>,
  id: string | undefined,
): Promise<Source> {
  const { rows } = await db.query<Row>(
    `INSERT INTO sources (id, workspace_id, name, host, port, database, sslmode, secret_ref, schemas, notes,
                          time_column_overrides)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::text[], $10, $11::jsonb)
     RETURNING ${COLUMNS}`,
    [
      id ?? newId("src"),
      workspaceId,
      s.name,
      s.host,
      s.port,
      s.database,
      s.sslmode,
      s.secretRef,
      s.schemas,
      s.notes,
      JSON.stringify(s.timeColumnOverrides),
    ],
  );
  return fromRow(rows[0] as Row);
}

/**
 * Applies `patch` when the stored version is `baseVersion` and bumps the version.
 * Throws `not_found` (also for another workspace's source) or `version_conflict`.
 */
export async function updateSource(
  db: Queryable,
  workspaceId: string,
  id: string,
  baseVersion: number,
  patch: SourcePatch,
): Promise<Source> {
  const parsed = SourcePatchSchema.safeParse(patch);
  if (!parsed.success) throw validation(parsed.error);
  const p = parsed.data;
  // Only keys present in the input change; zod defaults must not reset an omitted field.
  const has = (k: keyof SourcePatch) => Object.hasOwn(patch, k) && p[k] !== undefined;
  const { rows } = await db.query<Row>(
    `UPDATE sources SET
        name = CASE WHEN $4 THEN $5 ELSE name END,
        host = CASE WHEN $6 THEN $7 ELSE host END,
        port = CASE WHEN $8 THEN $9::integer ELSE port END,
        database = CASE WHEN $10 THEN $11 ELSE database END,
        sslmode = CASE WHEN $12 THEN $13 ELSE sslmode END,
        secret_ref = CASE WHEN $14 THEN $15 ELSE secret_ref END,
        schemas = CASE WHEN $16 THEN $17::text[] ELSE schemas END,
        notes = CASE WHEN $18 THEN $19 ELSE notes END,
        time_column_overrides = CASE WHEN $20 THEN $21::jsonb ELSE time_column_overrides END,
        version = version + 1,
        updated_at = now()
      WHERE id = $1 AND workspace_id = $2 AND version = $3
      RETURNING ${COLUMNS}`,
    [
      id,
      workspaceId,
      baseVersion,
      has("name"),
      p.name ?? null,
      has("host"),
      p.host ?? null,
      has("port"),
      p.port ?? null,
      has("database"),
      p.database ?? null,
      has("sslmode"),
      p.sslmode ?? null,
      has("secretRef"),
      p.secretRef ?? null,
      has("schemas"),
      p.schemas ?? null,
      has("notes"),
      p.notes ?? null,
      has("timeColumnOverrides"),
      JSON.stringify(p.timeColumnOverrides ?? []),
    ],
  );
  if (rows[0]) return fromRow(rows[0]);
  const current = await getSourceInWorkspace(db, workspaceId, id);
  if (!current) throw new AppError("not_found", "No such source in this workspace.");
  throw new AppError("version_conflict", `The source changed since version ${baseVersion}; reload it (now version ${current.version}).`, {
    currentVersion: current.version,
  });
}

/** Deletes a source of a workspace; the version it had when deleted (the audit trail's "before"), null when there was none. */
export async function deleteSource(db: Queryable, workspaceId: string, id: string): Promise<number | null> {
  const { rows } = await db.query<{ version: number }>("DELETE FROM sources WHERE id = $1 AND workspace_id = $2 RETURNING version", [
    id,
    workspaceId,
  ]);
  return rows[0]?.version ?? null;
}

/**
 * Stores a refreshed catalog and its refresh time. Does not bump `version`: a refresh must not make an
 * admin's concurrent edit fail. Returns null when the source no longer exists.
 */
export async function saveCatalog(db: Queryable, id: string, catalog: Catalog, refreshedAt: Date): Promise<Source | null> {
  const valid = CatalogSchema.parse(catalog);
  const { rows } = await db.query<Row>(
    `UPDATE sources SET catalog = $2::jsonb, catalog_refreshed_at = $3, updated_at = now()
      WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, JSON.stringify(valid), refreshedAt],
  );
  return rows[0] ? fromRow(rows[0]) : null;
}

/** The guard's cache key for a source's catalog; changes whenever the catalog is refreshed. */
export function catalogVersion(source: Pick<Source, "id" | "catalogRefreshedAt">): string {
  return `${source.id}@${source.catalogRefreshedAt ? source.catalogRefreshedAt.getTime() : "never"}`;
}

/**
 * `never_refreshed` blocks queries and generation; `stale` (older than CATALOG_STALE_AFTER_DAYS, 0 disables)
 * only warns.
 */
export function catalogStatus(
  source: Pick<Source, "catalog" | "catalogRefreshedAt">,
  staleAfterDays: number,
  nowMs: number,
): CatalogStatus {
  if (!source.catalog || !source.catalogRefreshedAt) return "never_refreshed";
  if (staleAfterDays <= 0) return "fresh";
  return nowMs - source.catalogRefreshedAt.getTime() > staleAfterDays * 86_400_000 ? "stale" : "fresh";
}

/** A source as the API shows it: every stored field plus the catalog status flag. No credentials exist here. */
export function sourceView(
  source: Source,
  staleAfterDays: number,
  nowMs: number,
): Source & { catalogStatus: CatalogStatus; catalogStale: boolean } {
  const status = catalogStatus(source, staleAfterDays, nowMs);
  return { ...source, catalogStatus: status, catalogStale: status === "stale" };
}
