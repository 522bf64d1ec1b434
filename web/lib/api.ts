/** The problem+json envelope of every API error. */
export interface Problem {
  code?: string;
  detail?: string;
  status?: number;
  requestId?: string;
  reason?: string;
  /** A guard refusal on save: each refused panel with its reason. */
  panels?: unknown;
  [k: string]: unknown;
}

/** An API call that did not succeed; `message` is the server's `detail`, fit to show the user. */
export class ApiError extends Error {
  readonly status: number;
  readonly problem: Problem;
  readonly retryAfter: number | null;
  constructor(status: number, problem: Problem, retryAfter: number | null) {
    super(problem.detail || `Request failed (HTTP ${status}).`);
    this.status = status;
    this.problem = problem;
    this.retryAfter = retryAfter;
  }
  get code(): string | undefined {
    return this.problem.code;
  }
}

/** Builds the login URL that returns to the current page. */
export function loginHref(): string {
  return `/api/auth/login?returnTo=${encodeURIComponent(location.pathname + location.search)}`;
}

/** Turns a failed response into an ApiError, reading problem+json when the server sent it. */
export async function toApiError(res: Response): Promise<ApiError> {
  let problem: Problem = { status: res.status };
  try {
    const text = await res.text();
    if (text) {
      const parsed = JSON.parse(text) as unknown;
      if (parsed && typeof parsed === "object") problem = parsed as Problem;
    }
  } catch {
    // Not JSON (a proxy's error page): fall back to a generic message.
  }
  if (!problem.detail) {
    problem.detail =
      res.status === 404
        ? "Not found, or you do not have access to it."
        : res.status >= 500
          ? "The server had a problem. Try again in a moment."
          : `Request failed (HTTP ${res.status}).`;
  }
  const ra = res.headers.get("retry-after");
  return new ApiError(res.status, problem, ra && /^\d+$/.test(ra) ? Number(ra) : null);
}

/**
 * Calls the JSON API: same-origin credentials, JSON in and out, problem+json errors thrown as
 * ApiError. A 401 means the session ended: the browser goes to the login page and comes back.
 */
export async function api<T>(method: string, path: string, body?: unknown, init: RequestInit = {}): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
    ...init,
  });
  if (res.status === 401) {
    location.assign(loginHref());
    throw await toApiError(res);
  }
  if (!res.ok) throw await toApiError(res);
  if (res.status === 204) return undefined as T;
  const type = res.headers.get("content-type") ?? "";
  return (type.includes("json") ? await res.json() : await res.text()) as T;
}

/** A message for any thrown value. */
export function errorText(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof TypeError) return "Could not reach the server. Check your connection and try again.";
  return err instanceof Error ? err.message : String(err);
}

// --- Shapes of the JSON API the pages use -------------------------------------------------------

export type Role = "viewer" | "editor" | "admin";

export interface Me {
  sub: string;
  name: string | null;
  email: string | null;
  groups: string[];
  workspaces?: Workspace[];
  accountUrl?: string | null;
}

export interface Workspace {
  id: string;
  name: string;
  role: Role;
}

export interface PanelSpec {
  id: string;
  title: string;
  type: "timeseries" | "stat" | "table" | "bar";
  sourceId: string;
  sql: string;
  unit?: string;
  options?: Record<string, unknown>;
}

export interface DashboardSpec {
  title: string;
  refreshIntervalMs?: number;
  time: { from: string; to: string };
  panels: PanelSpec[];
}

export interface Dashboard {
  id: string;
  workspaceId: string;
  version: number;
  spec: DashboardSpec;
  effectiveRefreshIntervalMs?: number;
  updatedBy?: string;
  updatedAt?: string;
}

export interface DashboardSummary {
  id: string;
  title: string;
  version: number;
  panelCount?: number;
  updatedBy?: string;
  updatedAt?: string;
}

export interface Source {
  id: string;
  workspaceId?: string;
  name: string;
  host?: string;
  port?: number;
  database?: string;
  sslmode?: string;
  secretRef?: string;
  schemas?: string[];
  notes?: string;
  version?: number;
  catalog?: { tables: { schema: string; name: string; timeColumn: string | null; columns: { name: string; type: string }[] }[] } | null;
  catalogRefreshedAt?: string | null;
  catalogStale?: boolean;
  catalogStatus?: "never_refreshed" | "stale" | "fresh";
  tableCount?: number;
  [k: string]: unknown;
}

/** Lists come either bare or wrapped ({dashboards: [...]}); accept both. */
export function listOf<T>(body: unknown, key: string): T[] {
  if (Array.isArray(body)) return body as T[];
  if (body && typeof body === "object" && Array.isArray((body as Record<string, unknown>)[key])) {
    return (body as Record<string, T[]>)[key];
  }
  return [];
}

export async function loadWorkspaces(): Promise<Workspace[]> {
  return listOf<Workspace>(await api<unknown>("GET", "/api/workspaces"), "workspaces");
}
