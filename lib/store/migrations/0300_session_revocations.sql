-- Server-side session revocation (docs/auth.md, "Ending sessions"). Session tokens are verified locally;
-- these rows are mirrored in memory by every process through NOTIFY pulseboard_session_revoked.
-- A row is needed only until every token it matches has expired (`expires_at`); writers sweep the
-- expired ones.

-- One logged-out session: the token's `sid`, its subject and its `exp`.
CREATE TABLE session_revocations (
  session_id text PRIMARY KEY,
  sub text NOT NULL,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX session_revocations_expires_at ON session_revocations (expires_at);

-- Every session of `sub` issued at or before `revoked_before` ("sign out everywhere", or an admin).
-- Kept until revoked_before + SESSION_TTL_SECONDS: tokens never live longer than that lifetime.
CREATE TABLE user_session_revocations (
  sub text PRIMARY KEY,
  revoked_before timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX user_session_revocations_expires_at ON user_session_revocations (expires_at);
