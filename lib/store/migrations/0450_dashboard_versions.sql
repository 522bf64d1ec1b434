-- Dashboard history (docs/api.md, "Dashboard history"): every saved version of a dashboard's spec, who
-- saved it, when, and an optional message. Written by the same statement that saves the dashboard;
-- the newest DASHBOARD_VERSION_RETENTION versions of each dashboard are kept. Deleting a dashboard
-- deletes its history.
CREATE TABLE dashboard_versions (
  dashboard_id  text NOT NULL REFERENCES dashboards(id) ON DELETE CASCADE,
  version       integer NOT NULL,
  spec          jsonb NOT NULL,
  saved_by      text NOT NULL,
  saved_at      timestamptz NOT NULL DEFAULT now(),
  message       text,
  PRIMARY KEY (dashboard_id, version)
);

-- The version every existing dashboard is at becomes its first recorded one.
INSERT INTO dashboard_versions (dashboard_id, version, spec, saved_by, saved_at)
SELECT id, version, spec, updated_by, updated_at FROM dashboards;
