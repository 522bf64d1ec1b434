import type pg from "pg";
import { z } from "zod";
import { AppError } from "../http/errors.ts";
import { type Timers, systemTimers } from "../lifecycle/timers.ts";
import type { Logger } from "../log/logger.ts";
import { type NotificationListener, createNotificationListener } from "../store/listen.ts";
import type { Session, SessionTokens } from "./session.ts";

/** NOTIFY channel on the config store; the payload is one revocation as JSON (see `Revocation`). */
export const SESSION_REVOKED_CHANNEL = "pulseboard_session_revoked";

/**
 * One revocation. `session`: the session `sessionId` (a logout). `user`: every session of `sub`
 * issued at or before `revokedBefore` (a platform admin's or the user's "sign out everywhere").
 * `workspace`: the same sessions lose their access to `workspaceId` only (a workspace admin's). All are
 * kept until `expiresAt` (epoch ms), after which every token they match has expired anyway.
 */
export type Revocation =
  | { kind: "session"; sessionId: string; sub: string; expiresAt: number }
  | { kind: "user"; sub: string; revokedBefore: number; expiresAt: number }
  | { kind: "workspace"; sub: string; workspaceId: string; revokedBefore: number; expiresAt: number };

const RevocationSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("session"), sessionId: z.string().min(1).max(64), sub: z.string().min(1).max(512), expiresAt: z.number() }),
  z.object({ kind: z.literal("user"), sub: z.string().min(1).max(512), revokedBefore: z.number(), expiresAt: z.number() }),
  z.object({
    kind: z.literal("workspace"),
    sub: z.string().min(1).max(512),
    workspaceId: z.string().min(1).max(64),
    revokedBefore: z.number(),
    expiresAt: z.number(),
  }),
]);

/** The part of a session a revocation is matched against. */
export type RevocableSession = Pick<Session, "sessionId" | "issuedAt" | "expiresAt"> & { user: { sub: string } };

/**
 * The in-memory mirror of the config store's revocations that every session check reads: no I/O on
 * the request path. Revocations only ever accumulate (nothing is un-revoked); entries are dropped once
 * expired. `loaded` turns true after the first full load.
 */
export interface RevocationSet {
  isRevoked(session: RevocableSession): boolean;
  /** True when the session lost its access to `workspaceId` (a `workspace` revocation), or is revoked outright. */
  isRevokedIn(session: RevocableSession, workspaceId: string): boolean;
  /** The workspaces the session lost its access to (empty for almost every session). */
  revokedWorkspaces(session: RevocableSession): string[];
  /** Adds revocations (a notification, or a full load that `markLoaded` follows). */
  add(...revocations: Revocation[]): void;
  markLoaded(): void;
  readonly loaded: boolean;
  /** Resolves when `loaded` turns true. */
  whenLoaded(): Promise<void>;
  /** Called after every change, so long-lived connections (streams) can end revoked sessions. */
  onChange(listener: () => void): () => void;
  /** Entries held and not yet expired (sessions, users and workspace scopes). */
  readonly size: number;
}

/** Expired entries are dropped at most this often (on add), so a burst of logouts costs one sweep. */
const PRUNE_EVERY_MS = 60_000;

/**
 * A revocation set. `loaded: true` makes it start as loaded, for a process that has no listener and
 * only sees its own revocations (tests); entry points load it through `listenForRevocations`.
 */
export function createRevocationSet(opts: { now?: () => number; loaded?: boolean } = {}): RevocationSet {
  const now = opts.now ?? Date.now;
  const sessions = new Map<string, number>();
  const users = new Map<string, { revokedBefore: number; expiresAt: number }>();
  /** sub → workspace id → the scope's revokedBefore and expiry. */
  const scoped = new Map<string, Map<string, { revokedBefore: number; expiresAt: number }>>();
  let scopedCount = 0;
  const listeners = new Set<() => void>();
  let loaded = opts.loaded ?? false;
  let lastPrune = now();
  /** The soonest expiry among the entries held (Infinity when none): `size` prunes once it has passed. */
  let earliest = Number.POSITIVE_INFINITY;
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  if (loaded) markReady();

  function prune(t: number) {
    lastPrune = t;
    earliest = Number.POSITIVE_INFINITY;
    for (const [id, exp] of sessions) {
      if (exp <= t) sessions.delete(id);
      else earliest = Math.min(earliest, exp);
    }
    for (const [sub, u] of users) {
      if (u.expiresAt <= t) users.delete(sub);
      else earliest = Math.min(earliest, u.expiresAt);
    }
    for (const [sub, byWorkspace] of scoped) {
      for (const [ws, r] of byWorkspace) {
        if (r.expiresAt > t) {
          earliest = Math.min(earliest, r.expiresAt);
          continue;
        }
        byWorkspace.delete(ws);
        scopedCount--;
      }
      if (byWorkspace.size === 0) scoped.delete(sub);
    }
  }

  function isRevoked(s: RevocableSession): boolean {
    if (sessions.has(s.sessionId)) return true;
    const u = users.get(s.user.sub);
    return u !== undefined && s.issuedAt <= u.revokedBefore;
  }

  function changed() {
    for (const l of [...listeners]) l();
  }

  return {
    isRevoked,
    isRevokedIn(s, workspaceId) {
      if (isRevoked(s)) return true;
      const r = scoped.get(s.user.sub)?.get(workspaceId);
      return r !== undefined && s.issuedAt <= r.revokedBefore;
    },
    revokedWorkspaces(s) {
      const byWorkspace = scoped.get(s.user.sub);
      if (!byWorkspace) return [];
      return [...byWorkspace].filter(([, r]) => s.issuedAt <= r.revokedBefore).map(([ws]) => ws);
    },
    add(...revocations) {
      const t = now();
      for (const r of revocations) {
        if (r.expiresAt <= t) continue;
        earliest = Math.min(earliest, r.expiresAt);
        if (r.kind === "session") {
          sessions.set(r.sessionId, Math.max(r.expiresAt, sessions.get(r.sessionId) ?? 0));
        } else if (r.kind === "workspace") {
          let byWorkspace = scoped.get(r.sub);
          if (!byWorkspace) {
            byWorkspace = new Map();
            scoped.set(r.sub, byWorkspace);
          }
          const had = byWorkspace.get(r.workspaceId);
          if (!had) scopedCount++;
          byWorkspace.set(r.workspaceId, {
            revokedBefore: Math.max(r.revokedBefore, had?.revokedBefore ?? Number.NEGATIVE_INFINITY),
            expiresAt: Math.max(r.expiresAt, had?.expiresAt ?? 0),
          });
        } else {
          const had = users.get(r.sub);
          users.set(r.sub, {
            revokedBefore: Math.max(r.revokedBefore, had?.revokedBefore ?? Number.NEGATIVE_INFINITY),
            expiresAt: Math.max(r.expiresAt, had?.expiresAt ?? 0),
          });
        }
      }
      if (t - lastPrune >= PRUNE_EVERY_MS) prune(t);
      if (revocations.length > 0) changed();
    },
    markLoaded() {
      if (loaded) return;
      loaded = true;
      markReady();
      changed();
    },
    get loaded() {
      return loaded;
    },
    whenLoaded: () => ready,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    get size() {
      // Counts live entries only: a cap read against it (SESSION_REVOCATIONS_MAX) frees up as soon as entries expire,
      // not only at the next add's periodic prune (which a refused revocation never reaches).
      const t = now();
      if (t >= earliest) prune(t);
      return sessions.size + users.size + scopedCount;
    },
  };
}

/** Parses a notification payload; null for anything that is not a revocation. */
export function parseRevocation(payload: string): Revocation | null {
  try {
    const r = RevocationSchema.safeParse(JSON.parse(payload));
    return r.success ? r.data : null;
  } catch {
    return null;
  }
}

const ts = (param: string) => `to_timestamp(${param}::float8 / 1000)`;

/**
 * Records a revocation in the config store and announces it on SESSION_REVOKED_CHANNEL, in one
 * statement (the notification is sent only if the row committed). Rows past their `expires_at`
 * (by `now`, epoch ms) are swept by the same statement.
 */
export async function recordRevocation(db: pg.Pool | pg.PoolClient, r: Revocation, now: number): Promise<void> {
  const payload = JSON.stringify(r);
  if (r.kind === "session") {
    await db.query(
      `WITH swept AS (DELETE FROM session_revocations WHERE expires_at <= ${ts("$4")} AND session_id <> $1),
            added AS (INSERT INTO session_revocations (session_id, sub, expires_at) VALUES ($1, $2, ${ts("$3")})
                      ON CONFLICT (session_id) DO NOTHING)
       SELECT pg_notify($5, $6)`,
      [r.sessionId, r.sub, r.expiresAt, now, SESSION_REVOKED_CHANNEL, payload],
    );
  } else if (r.kind === "workspace") {
    await db.query(
      `WITH swept AS (DELETE FROM workspace_session_revocations WHERE expires_at <= ${ts("$5")} AND NOT (sub = $1 AND workspace_id = $2)),
            added AS (INSERT INTO workspace_session_revocations (sub, workspace_id, revoked_before, expires_at)
                      VALUES ($1, $2, ${ts("$3")}, ${ts("$4")})
                      ON CONFLICT (sub, workspace_id) DO UPDATE SET
                        revoked_before = GREATEST(workspace_session_revocations.revoked_before, EXCLUDED.revoked_before),
                        expires_at = GREATEST(workspace_session_revocations.expires_at, EXCLUDED.expires_at),
                        revoked_at = now())
       SELECT pg_notify($6, $7)`,
      [r.sub, r.workspaceId, r.revokedBefore, r.expiresAt, now, SESSION_REVOKED_CHANNEL, payload],
    );
  } else {
    await db.query(
      `WITH swept AS (DELETE FROM user_session_revocations WHERE expires_at <= ${ts("$4")} AND sub <> $1),
            added AS (INSERT INTO user_session_revocations (sub, revoked_before, expires_at) VALUES ($1, ${ts("$2")}, ${ts("$3")})
                      ON CONFLICT (sub) DO UPDATE SET
                        revoked_before = GREATEST(user_session_revocations.revoked_before, EXCLUDED.revoked_before),
                        expires_at = GREATEST(user_session_revocations.expires_at, EXCLUDED.expires_at),
                        revoked_at = now())
       SELECT pg_notify($5, $6)`,
      [r.sub, r.revokedBefore, r.expiresAt, now, SESSION_REVOKED_CHANNEL, payload],
    );
  }
}

const ms = (column: string) => `round(extract(epoch FROM ${column}) * 1000)::float8`;

/** Every revocation that has not expired by `now` (epoch ms). */
export async function loadRevocations(db: pg.Pool | pg.PoolClient, now: number): Promise<Revocation[]> {
  const [sessions, users, scoped] = await Promise.all([
    db.query<{ session_id: string; sub: string; expires_at: number }>(
      `SELECT session_id, sub, ${ms("expires_at")} AS expires_at FROM session_revocations WHERE expires_at > ${ts("$1")}`,
      [now],
    ),
    db.query<{ sub: string; revoked_before: number; expires_at: number }>(
      `SELECT sub, ${ms("revoked_before")} AS revoked_before, ${ms("expires_at")} AS expires_at
         FROM user_session_revocations WHERE expires_at > ${ts("$1")}`,
      [now],
    ),
    db.query<{ sub: string; workspace_id: string; revoked_before: number; expires_at: number }>(
      `SELECT sub, workspace_id, ${ms("revoked_before")} AS revoked_before, ${ms("expires_at")} AS expires_at
         FROM workspace_session_revocations WHERE expires_at > ${ts("$1")}`,
      [now],
    ),
  ]);
  return [
    ...sessions.rows.map((r): Revocation => ({ kind: "session", sessionId: r.session_id, sub: r.sub, expiresAt: r.expires_at })),
    ...users.rows.map((r): Revocation => ({ kind: "user", sub: r.sub, revokedBefore: r.revoked_before, expiresAt: r.expires_at })),
    ...scoped.rows.map(
      (r): Revocation => ({
        kind: "workspace",
        sub: r.sub,
        workspaceId: r.workspace_id,
        revokedBefore: r.revoked_before,
        expiresAt: r.expires_at,
      }),
    ),
  ];
}

/**
 * What a process's config-store listener needs to keep `set` fresh: the handler of
 * SESSION_REVOKED_CHANNEL and the full reload to run after every LISTEN (at start and after a
 * reconnect, since notifications sent meanwhile are lost). A reload that fails rejects, so the
 * listener reconnects and tries again.
 */
export function revocationFeed(opts: { set: RevocationSet; pool: pg.Pool; now?: () => number; log: Logger }) {
  const now = opts.now ?? Date.now;
  return {
    channels: {
      [SESSION_REVOKED_CHANNEL]: (payload: string) => {
        const r = parseRevocation(payload);
        if (r) opts.set.add(r);
        else opts.log.warn("unreadable session revocation notification", { bytes: payload.length });
      },
    },
    async reload(): Promise<void> {
      opts.set.add(...(await loadRevocations(opts.pool, now())));
      opts.set.markLoaded();
    },
  };
}

/**
 * A config-store listener that keeps `set` fresh on its own connection (the handlers' process; the
 * stream host adds the same feed to the listener it already has for dashboard changes).
 */
export function listenForRevocations(opts: {
  set: RevocationSet;
  pool: pg.Pool;
  connect: () => pg.Client;
  timers?: Timers;
  now?: () => number;
  log: Logger;
}): NotificationListener {
  const feed = revocationFeed(opts);
  return createNotificationListener({
    connect: opts.connect,
    channels: feed.channels,
    onListening: () => feed.reload(),
    timers: opts.timers ?? systemTimers,
    log: opts.log,
  });
}

/** How long a session check waits for the first load of the revocations before answering 503. */
export const REVOCATIONS_LOAD_WAIT_MS = 5_000;

/**
 * Session tokens whose verification also refuses revoked sessions (checked in memory). Until `set`
 * has been loaded once, a valid token waits for that load (at most `waitMs`), then is a 503
 * `config_store_unavailable`: a session is never accepted unchecked.
 */
export function withRevocations<T extends Pick<SessionTokens, "verifySession">>(
  tokens: T,
  set: RevocationSet,
  opts: { waitMs?: number; timers?: Timers } = {},
): T & Pick<SessionTokens, "verify" | "verifySession"> {
  const timers = opts.timers ?? systemTimers;
  const waitMs = opts.waitMs ?? REVOCATIONS_LOAD_WAIT_MS;

  async function loadedOrThrow(): Promise<void> {
    if (set.loaded) return;
    let timer: unknown = null;
    await Promise.race([set.whenLoaded(), new Promise<void>((resolve) => (timer = timers.setTimeout(resolve, waitMs)))]);
    if (timer !== null) timers.clearTimeout(timer);
    if (!set.loaded) {
      throw new AppError(
        "config_store_unavailable",
        "Sessions cannot be checked right now because the configuration store is unavailable; try again shortly.",
        {},
        { "retry-after": "5" },
      );
    }
  }

  async function verifySession(token: string): Promise<Session | null> {
    const session = await tokens.verifySession(token);
    if (!session) return null;
    await loadedOrThrow();
    if (set.isRevoked(session)) return null;
    // Workspaces this session lost by a workspace admin's revocation: requireRole and the stream refuse them.
    const lost = set.revokedWorkspaces(session);
    return lost.length === 0 ? session : { ...session, user: { ...session.user, revokedWorkspaces: lost } };
  }

  return {
    ...tokens,
    verifySession,
    verify: async (token: string) => (await verifySession(token))?.user ?? null,
  };
}
