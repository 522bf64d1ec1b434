import type pg from "pg";
import type { LlmRoute } from "../metrics/metrics.ts";
import { MAX_JSON_DEPTH } from "../http/input.ts";
import { TOO_DEEP_MARKER } from "./output-bounds.ts";
import { redact } from "./redact.ts";
import { storableJson, storableText } from "./storable.ts";

/** What happened to one model interaction, as stored in generation_log.outcome. */
export type GenerationOutcome = "ok" | "provider_error" | "provider_timeout" | "invalid_output" | "cancelled";

/** One generation, source draft or chat turn to record. Prompt and result are redacted and capped before they are stored. */
export interface GenerationLogInput {
  workspaceId: string;
  userSub: string;
  route: LlmRoute;
  prompt: string;
  result: unknown;
  model: string;
  inputTokens: number;
  outputTokens: number;
  outcome: GenerationOutcome;
}

/** A stored row as the admin API returns it. */
export interface GenerationLogRow {
  id: string;
  userSub: string;
  route: LlmRoute;
  prompt: string;
  result: unknown;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cost: number;
  outcome: GenerationOutcome;
  createdAt: string;
}

export interface GenerationLog {
  /** Sweeps the workspace's expired rows and inserts one redacted row, in one statement. */
  write(entry: GenerationLogInput): Promise<{ id: string; cost: number }>;
  /** Newest first, never older than the retention; `before` pages by id. */
  list(workspaceId: string, opts?: { limit?: number; before?: string }): Promise<GenerationLogRow[]>;
}

export interface GenerationLogDeps {
  pool: pg.Pool;
  /** GENERATION_LOG_RETENTION_DAYS; 0 disables the age check. */
  retentionDays: number;
  /** AI_INPUT_COST_PER_MTOK / AI_OUTPUT_COST_PER_MTOK. */
  costPerMTok: { input: number; output: number };
  /** AI_LOG_MAX_CHARS: characters of the prompt, and of all strings of the result together, a row keeps. */
  maxChars: number;
  now?: () => number;
}

/**
 * A secret that straddles the end of the redacted window is seen only in part and may be missed.
 * Anything shorter than REACH that starts before the window's last REACH characters is seen whole.
 */
const REACH = 1024;
/** Characters redacted past the cut: what is kept stays far from the window's end. */
const WINDOW = 32 * REACH;
/** Redaction lengthens any stretch of text by at most this factor (`x://@` → `x://[credentials]@` is the worst case). */
const MAX_GROWTH = 14;

/**
 * `text` redacted and cut to at most `max` characters, plus a `[truncated …]` marker when cut. The cut
 * comes after redaction, so a secret across it is blanked whole, never kept in half. Only
 * `max + WINDOW` characters are redacted, unless redaction shrank them so much (long secrets
 * collapsed to markers) that the kept part could reach the last REACH characters of the window;
 * then the whole text is (in linear time, see redact.ts).
 */
export function redactCapped(text: string, max: number): string {
  if (text.length <= max) return redact(text);
  if (max <= 0) return truncatedMarker(text.length).trimStart();
  let redacted = redact(text.slice(0, max + WINDOW));
  if (max + WINDOW < text.length && redacted.length - MAX_GROWTH * REACH < max) redacted = redact(text);
  // Never cut a surrogate pair in half (an unpaired half is not storable).
  const code = redacted.charCodeAt(max - 1);
  const end = code >= 0xd800 && code <= 0xdbff ? max - 1 : max;
  return `${redacted.slice(0, end)}${truncatedMarker(text.length)}`;
}

const truncatedMarker = (length: number) => ` …[truncated: ${length} characters in all, AI_LOG_MAX_CHARS]`;

/**
 * Redacts every string inside a JSON value (model output may echo what the prompt carried), cutting
 * them once `max` characters in all have been kept; strings past the budget keep only the marker.
 */
export function redactDeep(value: unknown, max = Number.POSITIVE_INFINITY): unknown {
  let left = max;
  // The recursion is bounded: anything nested past MAX_JSON_DEPTH (which model output checked by
  // modelOutputIssue never is) is replaced by a marker instead of walked.
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === "string") {
      const out = redactCapped(v, Math.max(left, 0));
      left -= Math.min(v.length, Math.max(left, 0));
      return out;
    }
    if (v && typeof v === "object" && depth >= MAX_JSON_DEPTH) return TOO_DEEP_MARKER;
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1));
    if (v && typeof v === "object") {
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, walk(x, depth + 1)]));
    }
    return v;
  };
  return walk(value, 0);
}

const DAY_MS = 86_400_000;

/** The generation_log store of the config store. */
export function createGenerationLog(deps: GenerationLogDeps): GenerationLog {
  const now = deps.now ?? Date.now;
  const cutoff = (at: number) => (deps.retentionDays > 0 ? new Date(at - deps.retentionDays * DAY_MS).toISOString() : null);

  return {
    async write(entry) {
      const at = now();
      const cost = (entry.inputTokens * deps.costPerMTok.input + entry.outputTokens * deps.costPerMTok.output) / 1_000_000;
      const { rows } = await deps.pool.query<{ id: string }>(
        `WITH sweep AS (
           DELETE FROM generation_log WHERE workspace_id = $1 AND $10::timestamptz IS NOT NULL AND created_at < $10::timestamptz
         )
         INSERT INTO generation_log
           (workspace_id, user_sub, route, prompt, result, model, input_tokens, output_tokens, cost, outcome, created_at)
         VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $11, $12::timestamptz)
         RETURNING id::text`,
        [
          entry.workspaceId,
          entry.userSub,
          entry.route,
          storableText(redactCapped(entry.prompt, deps.maxChars)),
          JSON.stringify(storableJson(redactDeep(entry.result ?? null, deps.maxChars))),
          entry.model,
          Math.max(0, Math.floor(entry.inputTokens)),
          Math.max(0, Math.floor(entry.outputTokens)),
          cost,
          cutoff(at),
          entry.outcome,
          new Date(at).toISOString(),
        ],
      );
      return { id: rows[0]!.id, cost };
    },

    async list(workspaceId, opts = {}) {
      const limit = Math.min(Math.max(opts.limit ?? 50, 1), 200);
      const { rows } = await deps.pool.query<{
        id: string;
        user_sub: string;
        route: LlmRoute;
        prompt: string;
        result: unknown;
        model: string;
        input_tokens: number;
        output_tokens: number;
        cost: string;
        outcome: GenerationOutcome;
        created_at: Date;
      }>(
        `SELECT id::text, user_sub, route, prompt, result, model, input_tokens, output_tokens, cost::text, outcome, created_at
           FROM generation_log
          WHERE workspace_id = $1
            AND ($2::timestamptz IS NULL OR created_at >= $2::timestamptz)
            AND ($3::bigint IS NULL OR id < $3::bigint)
          ORDER BY created_at DESC, id DESC
          LIMIT $4`,
        [workspaceId, cutoff(now()), opts.before ?? null, limit],
      );
      return rows.map((r) => ({
        id: r.id,
        userSub: r.user_sub,
        route: r.route,
        prompt: r.prompt,
        result: r.result,
        model: r.model,
        inputTokens: r.input_tokens,
        outputTokens: r.output_tokens,
        cost: Number(r.cost),
        outcome: r.outcome,
        createdAt: r.created_at.toISOString(),
      }));
    },
  };
}
