// The config store's least-privilege login for the processes, ensured by each stream host task's `app-role`
// container after `migrate`, as the RDS master user (docs/infra.md, "Database roles"):
//   node dist/app-role/main.mjs        (infra/app-role-cli.ts; DATABASE_URL without a user, PGUSER/PGPASSWORD of the master)
//
// The processes log in as APP_LOGIN_ROLE, or as its `_clone` twin: Secrets Manager's alternating-users rotation
// creates the twin with the same role memberships and switches between the two, so the previous password keeps
// working while every process picks up the new one. The privileges therefore live on APP_ACCESS_ROLE, a group
// role both logins are members of: read and write the config store's tables, nothing else (no DDL, no roles).
import pg from "pg";

export const APP_LOGIN_ROLE = "pulseboard_app";
export const APP_ACCESS_ROLE = "pulseboard_app_access";
// Any fixed 64-bit key; two tasks starting at once serialize on it.
const APP_ROLE_LOCK_KEY = 7_140_211_002;

const IDENT = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Creates the access role and the login role when they do not exist (the login without a password: the
 * first rotation of its secret sets one), and grants the access role what the processes need on every table
 * and sequence of the schema, now and for tables later migrations create. Idempotent; never changes a password.
 */
export async function ensureAppRole(
  client: pg.ClientBase,
  roles: { login: string; access: string; schema?: string } = { login: APP_LOGIN_ROLE, access: APP_ACCESS_ROLE },
): Promise<{ created: string[] }> {
  const schema = roles.schema ?? "public";
  for (const name of [roles.login, roles.access, schema]) {
    if (!IDENT.test(name)) throw new Error(`not a plain identifier: ${JSON.stringify(name)}`);
  }
  const created: string[] = [];
  await client.query("BEGIN");
  try {
    await client.query("SELECT pg_advisory_xact_lock($1)", [APP_ROLE_LOCK_KEY]);
    const exists = async (name: string) => (await client.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [name])).rowCount === 1;
    if (!(await exists(roles.access))) {
      await client.query(`CREATE ROLE ${roles.access} NOLOGIN`);
      created.push(roles.access);
    }
    if (!(await exists(roles.login))) {
      await client.query(`CREATE ROLE ${roles.login} LOGIN IN ROLE ${roles.access}`);
      created.push(roles.login);
    }
    const { rows } = await client.query<{ db: string; owner: string }>("SELECT current_database() AS db, current_user AS owner");
    const db = rows[0].db.replaceAll('"', '""');
    await client.query(`GRANT CONNECT ON DATABASE "${db}" TO ${roles.access}`);
    await client.query(`GRANT USAGE ON SCHEMA ${schema} TO ${roles.access}`);
    await client.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${roles.access}`);
    await client.query(`GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA ${schema} TO ${roles.access}`);
    // Tables and sequences that later migrations create (as this user) get the same grants.
    await client.query(`ALTER DEFAULT PRIVILEGES IN SCHEMA ${schema} GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ${roles.access}`);
    await client.query(`ALTER DEFAULT PRIVILEGES IN SCHEMA ${schema} GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO ${roles.access}`);
    await client.query("COMMIT");
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  }
  return { created };
}

/** The container's command: one connection as the master user, the roles ensured, exit 0 (or 1 with the error code). */
export async function main(env: Record<string, string | undefined> = process.env): Promise<number> {
  const client = new pg.Client({ connectionString: env.DATABASE_URL, application_name: "pulseboard-app-role" });
  try {
    await client.connect();
    const { created } = await ensureAppRole(client);
    console.log(created.length ? `created: ${created.join(", ")}` : "app roles are up to date");
    return 0;
  } catch (err) {
    // A code, never the message: it can carry the host and the user.
    console.error(`app role setup failed: ${(err as { code?: string }).code ?? (err as Error).name}`);
    return 1;
  } finally {
    await client.end().catch(() => {});
  }
}
