/** A user of the development identity provider. */
export interface DevUser {
  /** The account id, also the `sub` claim. */
  id: string;
  name: string;
  email: string;
  groups: string[];
  /** Shown on the sign-in page next to the name. */
  description?: string;
}

/** Group names of the demo workspace that `npm start` seeds; one demo user per role. */
export const DEMO_WORKSPACE_GROUPS = {
  viewer_group: "demo-viewers",
  editor_group: "demo-editors",
  admin_group: "demo-admins",
} as const;

/** The demo users: a viewer, an editor and an admin of the demo workspace. */
export const DEMO_USERS: readonly DevUser[] = [
  {
    id: "demo-viewer",
    name: "Demo Viewer",
    email: "viewer@demo.pulseboard.test",
    groups: [DEMO_WORKSPACE_GROUPS.viewer_group],
    description: "views dashboards and chats",
  },
  {
    id: "demo-editor",
    name: "Demo Editor",
    email: "editor@demo.pulseboard.test",
    groups: [DEMO_WORKSPACE_GROUPS.editor_group],
    description: "also edits dashboards, previews queries, generates",
  },
  {
    id: "demo-admin",
    name: "Demo Admin",
    email: "admin@demo.pulseboard.test",
    groups: [DEMO_WORKSPACE_GROUPS.admin_group],
    description: "also manages sources and limits",
  },
];
