-- Scoped revocation (docs/auth.md, "Ending sessions"): every session of `sub` issued at or before
-- `revoked_before` loses its access to one workspace, the others untouched (a workspace admin's revocation).
-- Mirrored in memory by every process through NOTIFY pulseboard_session_revoked, like the other two kinds;
-- kept until revoked_before + SESSION_TTL_SECONDS, and writers sweep the expired rows.
CREATE TABLE workspace_session_revocations (
  sub text NOT NULL,
  workspace_id text NOT NULL,
  revoked_before timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (sub, workspace_id)
);
CREATE INDEX workspace_session_revocations_expires_at ON workspace_session_revocations (expires_at);
