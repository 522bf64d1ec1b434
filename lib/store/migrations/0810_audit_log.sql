-- The audit trail (docs/api.md, "Audit trail"): one row per change to a workspace's configuration, by whom
-- (a person's sub, a token's id, or a process such as provisioning), what (action and target), and the
-- target's version before and after where it has one. Rows older than AUDIT_RETENTION_DAYS are swept on write.
-- Not a foreign key to workspaces: the record of a deleted workspace outlives it until its retention ends.
CREATE TABLE audit_log (
  id              bigserial PRIMARY KEY,
  workspace_id    text NOT NULL,
  actor_kind      text NOT NULL CHECK (actor_kind IN ('person', 'token', 'system')),
  actor_id        text NOT NULL,
  action          text NOT NULL,
  target_kind     text NOT NULL,
  target_id       text NOT NULL,
  before_version  integer,
  after_version   integer,
  request_id      text,
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_log_workspace ON audit_log (workspace_id, created_at DESC, id DESC);
CREATE INDEX audit_log_created_at ON audit_log (created_at);
