-- A source's time-column choices (DESIGN section 3: "timeColumn is the first timestamptz/timestamp/date
-- column unless the user sets it"). A JSON array of {"schema","table","column"}; column null means
-- "this table has no time column". Applied at every catalog refresh.
ALTER TABLE sources ADD COLUMN time_column_overrides jsonb NOT NULL DEFAULT '[]'::jsonb;
