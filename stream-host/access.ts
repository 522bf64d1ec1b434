import type { RevocationSet } from "../lib/auth/revocations.ts";
import type { ForbiddenFrame, ForbiddenReason } from "../lib/live/frames.ts";
import { callerRoleIn, type WorkspaceGroups } from "../lib/auth/roles.ts";
import type { Timers } from "../lib/lifecycle/timers.ts";
import type { Logger } from "../lib/log/logger.ts";
import { WORKSPACE_ACCESS_CHANNEL } from "../lib/workspaces/store.ts";
import type { Hub, StreamSession } from "./hub.ts";
import { encodeEvent } from "./sse.ts";

/**
 * The terminal frame of a stream whose viewer lost their role in its workspace. The stream closes after it and a
 * reconnect is refused (404, as for anyone without a role there), so the client stops instead of retrying.
 */
export function forbiddenFrame(event: ForbiddenFrame): Buffer {
  return encodeEvent("forbidden", event);
}

/** How often a workspace whose groups could not be read is tried again, and how many times. */
export const RECHECK_RETRY_MS = 2_000;
export const RECHECK_ATTEMPTS = 5;

export interface StreamAccessOptions {
  hub: Pick<Hub, "endWhere" | "activeIds" | "current">;
  revocations: RevocationSet;
  /** A workspace's role groups from the config store; null when it no longer exists. */
  loadWorkspace(id: string): Promise<(WorkspaceGroups & { id: string }) | null>;
  timers: Timers;
  log: Logger;
}

/**
 * Ends the open streams of people who lose their role in a workspace, on this instance, whatever instance made the
 * change: a change of the workspace's role groups or its deletion (announced on WORKSPACE_ACCESS_CHANNEL, then the
 * workspace is read again and every stream of it re-checked against the groups of the session it was opened with),
 * and a workspace admin's revocation of a person's access (a `workspace` revocation in the revocation set). Streams of
 * other workspaces, and of people who keep a role, continue.
 */
export function createStreamAccess(opts: StreamAccessOptions) {
  const { hub, revocations, log } = opts;

  function end(match: (workspaceId: string, session: StreamSession) => ForbiddenReason | null): number {
    return hub.endWhere((s) => {
      const reason = s.session ? match(s.workspaceId, s.session) : null;
      return reason ? forbiddenFrame({ workspaceId: s.workspaceId, reason }) : null;
    });
  }

  /** Reads workspace `id` again and ends the streams of sessions that no longer have a role in it. */
  async function recheck(id: string, attempt = 1): Promise<number> {
    let ws: (WorkspaceGroups & { id: string }) | null;
    try {
      ws = await opts.loadWorkspace(id);
    } catch (err) {
      const streams = workspacesWithStreams().has(id);
      log.warn("workspace access could not be re-checked", { workspace: id, attempt, error: err instanceof Error ? err.name : "error" });
      if (streams && attempt < RECHECK_ATTEMPTS) opts.timers.setTimeout(() => void recheck(id, attempt + 1), RECHECK_RETRY_MS);
      return 0;
    }
    const ended = end((workspaceId, session) => {
      if (workspaceId !== id) return null;
      if (!ws) return "workspace_deleted";
      return callerRoleIn(session.user, ws) ? null : "role_removed";
    });
    if (ended > 0) log.info("streams of people without a role ended", { workspace: id, streams: ended });
    return ended;
  }

  function workspacesWithStreams(): Set<string> {
    const ids = new Set<string>();
    for (const d of hub.activeIds()) {
      const ws = hub.current(d)?.workspaceId;
      if (ws) ids.add(ws);
    }
    return ids;
  }

  return {
    /** Handlers for the config-store listener. */
    channels: {
      [WORKSPACE_ACCESS_CHANNEL]: (workspaceId: string) => void recheck(workspaceId),
    } as Record<string, (payload: string) => void>,
    recheck,
    /** Re-checks every workspace with open streams here (after a listener reconnect: notifications sent meanwhile are lost). */
    async recheckAll(): Promise<number> {
      const counts = await Promise.all([...workspacesWithStreams()].map((id) => recheck(id)));
      return counts.reduce((a, b) => a + b, 0);
    },
    /** Ends the streams whose session lost its access to their workspace by a `workspace` revocation. */
    revocationsChanged(): number {
      const ended = end((workspaceId, session) =>
        !revocations.isRevoked(session) && revocations.isRevokedIn(session, workspaceId) ? "access_revoked" : null,
      );
      if (ended > 0) log.info("streams of revoked workspace access ended", { streams: ended });
      return ended;
    },
  };
}

export type StreamAccess = ReturnType<typeof createStreamAccess>;
