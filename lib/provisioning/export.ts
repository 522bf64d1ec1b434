import type pg from "pg";
import { stringify } from "yaml";
import { DASHBOARD_COLUMNS, dashboardFromRow } from "../dashboards/store.ts";
import { AppError } from "../http/errors.ts";
import { listSources } from "../sources/store.ts";
import { getWorkspace } from "../workspaces/store.ts";

type Queryable = pg.Pool | pg.PoolClient;

/**
 * One workspace as a provisioning document (docs/provisioning.md): its name and role groups, its sources (by
 * secret_ref: a provisioning file never holds credentials, and catalogs are read again on apply) and its dashboards
 * with their specs (variables included), each under its stored id. Applying it to the same store changes nothing;
 * applying it to an empty one recreates the workspace. Throws `not_found` for an unknown workspace.
 */
export async function exportWorkspace(db: Queryable, workspaceId: string) {
  const ws = await getWorkspace(db, workspaceId);
  if (!ws) throw new AppError("not_found", `There is no workspace ${workspaceId} in this config store.`);
  const sources = await listSources(db, workspaceId);
  // One statement however many dashboards there are.
  const { rows } = await db.query(`SELECT ${DASHBOARD_COLUMNS} FROM dashboards WHERE workspace_id = $1 ORDER BY id`, [workspaceId]);
  return {
    apiVersion: 1 as const,
    workspaces: [
      {
        id: ws.id,
        name: ws.name,
        groups: { viewer: ws.viewer_group, editor: ws.editor_group, admin: ws.admin_group },
        sources: [...sources]
          .sort((a, b) => a.id.localeCompare(b.id))
          .map((s) => ({
            id: s.id,
            name: s.name,
            host: s.host,
            port: s.port,
            database: s.database,
            sslmode: s.sslmode,
            secretRef: s.secretRef,
            schemas: s.schemas,
            notes: s.notes,
            timeColumnOverrides: s.timeColumnOverrides ?? [],
          })),
        dashboards: rows.map(dashboardFromRow).map((d) => ({ id: d.id, spec: d.spec })),
      },
    ],
  };
}

/** The export as the text of a provisioning file (YAML), headed by what it is and what it leaves out. */
export function exportText(doc: Awaited<ReturnType<typeof exportWorkspace>>, at: Date): string {
  const header = [
    `# Pulseboard provisioning file: workspace ${doc.workspaces[0]!.id}, exported ${at.toISOString()}.`,
    "# Apply with: npm run provision -- FILE. Credentials are not in it: each source names its secretRef.",
  ].join("\n");
  return `${header}\n${stringify(doc, { lineWidth: 0 })}`;
}
