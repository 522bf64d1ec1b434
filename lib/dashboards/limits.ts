// Limits of a dashboard spec that the browser checks too, before a request: kept apart from spec.ts so that the
// pages import a number, not the zod schema.

/** Characters of one panel's (or query variable's) SQL. */
export const MAX_PANEL_SQL_LENGTH = 20_000;
