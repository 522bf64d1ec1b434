-- Workspace-scoped API tokens (docs/auth.md, "API tokens"). The token itself is shown once and never stored:
-- `secret_hash` is the SHA-256 of the whole token, found by `prefix` (the random part of the id, also in the
-- token's text). `bucket_tokens` / `bucket_at` are the token's request-rate bucket (API_TOKEN_RATE_PER_MINUTE),
-- shared by every instance. A revoked token keeps its row (revoked_at) so the audit trail can name it.
CREATE TABLE api_tokens (
  id             text PRIMARY KEY,
  workspace_id   text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name           text NOT NULL,
  role           text NOT NULL CHECK (role IN ('viewer', 'editor', 'admin')),
  prefix         text NOT NULL UNIQUE,
  secret_hash    text NOT NULL,
  created_by     text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  expires_at     timestamptz,
  last_used_at   timestamptz,
  revoked_at     timestamptz,
  revoked_by     text,
  bucket_tokens  double precision,
  bucket_at      timestamptz
);
CREATE INDEX api_tokens_workspace ON api_tokens (workspace_id, created_at DESC);
