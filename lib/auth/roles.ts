import { ROLES, type Role, type SessionUser } from "./types.ts";

/** The OIDC group names that grant each role in one workspace. */
export interface WorkspaceGroups {
  viewer_group: string;
  editor_group: string;
  admin_group: string;
}

/** The highest role the groups grant in the workspace, or null when they grant none. */
export function roleIn(groups: readonly string[], ws: WorkspaceGroups): Role | null {
  const set = new Set(groups);
  if (ws.admin_group && set.has(ws.admin_group)) return "admin";
  if (ws.editor_group && set.has(ws.editor_group)) return "editor";
  if (ws.viewer_group && set.has(ws.viewer_group)) return "viewer";
  return null;
}

/**
 * The caller's role in a workspace: an API token's own role in its one workspace, else what the groups grant, unless
 * a workspace admin revoked this session's access to it (`revokedWorkspaces`, set by the revocation check); null for none.
 */
export function callerRoleIn(
  user: Pick<SessionUser, "groups" | "token" | "revokedWorkspaces">,
  ws: WorkspaceGroups & { id: string },
): Role | null {
  if (user.token) return user.token.workspaceId === ws.id ? user.token.role : null;
  if (user.revokedWorkspaces?.includes(ws.id)) return null;
  return roleIn(user.groups, ws);
}

/** True when `have` is at least `need` (viewer < editor < admin). */
export function roleAtLeast(have: Role, need: Role): boolean {
  return ROLES.indexOf(have) >= ROLES.indexOf(need);
}

/** True when `groups` holds the platform-admin group (PLATFORM_ADMIN_GROUP); nobody is one while it is unset. */
export function isPlatformAdmin(groups: readonly string[], platformAdminGroup: string | undefined): boolean {
  return platformAdminGroup !== undefined && platformAdminGroup !== "" && groups.includes(platformAdminGroup);
}
