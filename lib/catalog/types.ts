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

/** A source's catalog (docs/query-runner.md, catalogs). */
export const CatalogSchema = z.object({ tables: z.array(CatalogTableSchema) });

export type CatalogColumn = z.infer<typeof CatalogColumnSchema>;
export type CatalogTable = z.infer<typeof CatalogTableSchema>;
export type Catalog = z.infer<typeof CatalogSchema>;
