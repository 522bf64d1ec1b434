import { z } from "zod";

/** One column of a catalog table. */
export const CatalogColumnSchema = z.object({ name: z.string(), type: z.string() });

/** One table of a source's catalog; `timeColumn` is null for tables without a time column. */
export const CatalogTableSchema = z.object({
  schema: z.string(),
  name: z.string(),
  timeColumn: z.string().nullable(),
  columns: z.array(CatalogColumnSchema),
});

/**
 * The limits a panel statement runs under on a source, as the server reports them: statement_timeout and
 * work_mem as the runner sets them, temp_file_limit as the role (or server) has it; `-1` means unlimited.
 */
export const SourceLimitsSchema = z.object({ statementTimeout: z.string(), tempFileLimit: z.string(), workMem: z.string() });

/**
 * A source's catalog (docs/query-runner.md, catalogs): its tables, and the role's limits as the refresh read
 * them (absent in a catalog stored before refreshes recorded them).
 */
export const CatalogSchema = z.object({ tables: z.array(CatalogTableSchema), limits: SourceLimitsSchema.optional() });

export type CatalogColumn = z.infer<typeof CatalogColumnSchema>;
export type CatalogTable = z.infer<typeof CatalogTableSchema>;
export type Catalog = z.infer<typeof CatalogSchema>;
export type SourceLimits = z.infer<typeof SourceLimitsSchema>;
