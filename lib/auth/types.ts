/** Workspace roles, weakest first: viewer (view, chat) < editor (+ edit, preview, generate) < admin (+ sources, limits). */
export const ROLES = ["viewer", "editor", "admin"] as const;
export type Role = (typeof ROLES)[number];

/** The signed-in user as carried by the session token, or the identity of an API token (lib/api-tokens). */
export interface SessionUser {
  sub: string;
  name?: string;
  email?: string;
  groups: string[];
  /**
   * Workspaces this session lost its access to by a workspace admin's revocation: set by the revocation check
   * (lib/auth/revocations.ts), never read from the token. Roles in them are refused whatever the groups grant.
   */
  revokedWorkspaces?: readonly string[];
  /** Set when the caller is an API token: its `sub` is `token:<id>`, its groups are empty, its role is this one, in this workspace only. */
  token?: TokenIdentity;
}

/** What an API token may do: `role` in `workspaceId`, nothing anywhere else. */
export interface TokenIdentity {
  id: string;
  workspaceId: string;
  role: Role;
}

/** Hono context variables set by the auth middleware (lib/auth/middleware.ts). */
export interface AuthVariables {
  user: SessionUser;
  /** Set by requireRole: the workspace the request acts on and the caller's role in it. */
  workspaceId: string;
  role: Role;
  requestId: string;
}
