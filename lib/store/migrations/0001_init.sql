-- Pulseboard config store. Ids are opaque random strings (see lib/store/ids.ts);
-- they are the only values of the dashboard/source/workspace metric labels.

CREATE TABLE workspaces (
  id            text PRIMARY KEY,
  name          text NOT NULL,
  viewer_group  text NOT NULL,
  editor_group  text NOT NULL,
  admin_group   text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);

-- Per-workspace overrides; NULL means "use the environment default".
CREATE TABLE workspace_limits (
  workspace_id            text PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
  llm_rate_per_minute     integer CHECK (llm_rate_per_minute >= 0),
  llm_daily_token_budget  bigint CHECK (llm_daily_token_budget >= 0),
  updated_at              timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sources (
  id                    text PRIMARY KEY,
  workspace_id          text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name                  text NOT NULL,
  host                  text NOT NULL,
  port                  integer NOT NULL DEFAULT 5432 CHECK (port BETWEEN 1 AND 65535),
  database              text NOT NULL,
  sslmode               text NOT NULL DEFAULT 'prefer',
  secret_ref            text NOT NULL,
  schemas               text[] NOT NULL DEFAULT ARRAY['public'],
  catalog               jsonb,
  catalog_refreshed_at  timestamptz,
  notes                 text NOT NULL DEFAULT '',
  version               integer NOT NULL DEFAULT 1,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sources_workspace ON sources (workspace_id);

CREATE TABLE dashboards (
  id            text PRIMARY KEY,
  workspace_id  text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  spec          jsonb NOT NULL,
  version       integer NOT NULL DEFAULT 1,
  created_by    text NOT NULL,
  updated_by    text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dashboards_workspace ON dashboards (workspace_id);

CREATE TABLE chat_messages (
  id            bigserial PRIMARY KEY,
  workspace_id  text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  dashboard_id  text NOT NULL REFERENCES dashboards(id) ON DELETE CASCADE,
  user_sub      text NOT NULL,
  role          text NOT NULL CHECK (role IN ('user', 'assistant')),
  content       text NOT NULL,
  proposal      jsonb,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX chat_messages_thread ON chat_messages (dashboard_id, user_sub, created_at DESC, id DESC);

CREATE TABLE generation_log (
  id             bigserial PRIMARY KEY,
  workspace_id   text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  user_sub       text NOT NULL,
  route          text NOT NULL,
  prompt         text NOT NULL,
  result         jsonb,
  model          text NOT NULL,
  input_tokens   integer NOT NULL DEFAULT 0,
  output_tokens  integer NOT NULL DEFAULT 0,
  cost           numeric NOT NULL DEFAULT 0,
  outcome        text NOT NULL DEFAULT 'ok',
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX generation_log_workspace ON generation_log (workspace_id, created_at DESC);

-- Token bucket per user per workspace: tokens left at updated_at.
CREATE TABLE llm_rate_buckets (
  workspace_id  text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  user_sub      text NOT NULL,
  tokens        double precision NOT NULL,
  updated_at    timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, user_sub)
);

-- Model tokens used per workspace per UTC day.
CREATE TABLE llm_usage_daily (
  workspace_id  text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  day           date NOT NULL,
  tokens        bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, day)
);
