import type pg from "pg";
import type { DashboardSpec } from "../dashboards/spec.ts";
import { storableJson, storableText } from "./storable.ts";

/** A proposed spec change carried by an assistant message; applied through the normal save path. */
export interface ChatProposal {
  spec: DashboardSpec;
  /** The dashboard version the proposal was written against (the apply call's optimistic check). */
  baseVersion: number;
}

/** One message of one person's chat on one dashboard. */
export interface ChatMessage {
  id: string;
  role: "user" | "assistant";
  content: string;
  proposal: ChatProposal | null;
  createdAt: string;
}

/** Thread key: a chat belongs to one person on one dashboard of one workspace. */
export interface ChatThread {
  workspaceId: string;
  dashboardId: string;
  userSub: string;
}

export interface ChatStoreDeps {
  pool: pg.Pool;
  /** CHAT_HISTORY_MAX_MESSAGES: kept and replayed; enforced on write and on read. */
  maxMessages: number;
  /** CHAT_HISTORY_RETENTION_DAYS: 0 leaves only the cap. */
  retentionDays: number;
  now?: () => number;
}

export interface ChatStore {
  /** The newest `maxMessages` unexpired messages of the thread, oldest first. */
  history(thread: ChatThread): Promise<ChatMessage[]>;
  /**
   * Stores a whole turn (question and answer) in one transaction and trims the thread to the cap and retention.
   * NUL and unpaired surrogates (which a model can emit) are stored as U+FFFD.
   */
  appendTurn(
    thread: ChatThread,
    turn: { question: string; answer: string; proposal: ChatProposal | null },
  ): Promise<{ userMessageId: string; assistantMessageId: string }>;
  /** One unexpired assistant message with a proposal, of this thread only. */
  proposal(thread: ChatThread, messageId: string): Promise<ChatProposal | null>;
  /** Deletes the thread. */
  clear(thread: ChatThread): Promise<number>;
}

const DAY_MS = 86_400_000;

interface Row {
  id: string;
  role: "user" | "assistant";
  content: string;
  proposal: ChatProposal | null;
  created_at: Date;
}

/** The chat_messages store of the config store. */
export function createChatStore(deps: ChatStoreDeps): ChatStore {
  const now = deps.now ?? Date.now;
  const cutoff = (at: number) => (deps.retentionDays > 0 ? new Date(at - deps.retentionDays * DAY_MS).toISOString() : null);

  return {
    async history(t) {
      const { rows } = await deps.pool.query<Row>(
        `SELECT id::text, role, content, proposal, created_at FROM (
           SELECT id, role, content, proposal, created_at FROM chat_messages
            WHERE workspace_id = $1 AND dashboard_id = $2 AND user_sub = $3
              AND ($4::timestamptz IS NULL OR created_at >= $4::timestamptz)
            ORDER BY created_at DESC, id DESC
            LIMIT $5
         ) newest ORDER BY created_at, id`,
        [t.workspaceId, t.dashboardId, t.userSub, cutoff(now()), deps.maxMessages],
      );
      return rows.map((r) => ({
        id: r.id,
        role: r.role,
        content: r.content,
        proposal: r.proposal,
        createdAt: r.created_at.toISOString(),
      }));
    },

    async appendTurn(t, turn) {
      const at = now();
      const client = await deps.pool.connect();
      try {
        await client.query("BEGIN");
        // The answer is stamped one millisecond after the question so the order survives any sort.
        const { rows } = await client.query<{ id: string; role: string }>(
          `INSERT INTO chat_messages (workspace_id, dashboard_id, user_sub, role, content, proposal, created_at)
           VALUES ($1, $2, $3, 'user', $4, NULL, $6::timestamptz),
                  ($1, $2, $3, 'assistant', $5, $7::jsonb, $6::timestamptz + interval '1 millisecond')
           RETURNING id::text, role`,
          [
            t.workspaceId,
            t.dashboardId,
            t.userSub,
            storableText(turn.question),
            storableText(turn.answer),
            new Date(at).toISOString(),
            turn.proposal ? JSON.stringify(storableJson(turn.proposal)) : null,
          ],
        );
        await client.query(
          `DELETE FROM chat_messages
            WHERE dashboard_id = $1 AND user_sub = $2
              AND (($3::timestamptz IS NOT NULL AND created_at < $3::timestamptz)
                   OR id NOT IN (SELECT id FROM chat_messages WHERE dashboard_id = $1 AND user_sub = $2
                                  ORDER BY created_at DESC, id DESC LIMIT $4))`,
          [t.dashboardId, t.userSub, cutoff(at), deps.maxMessages],
        );
        await client.query("COMMIT");
        return {
          userMessageId: rows.find((r) => r.role === "user")!.id,
          assistantMessageId: rows.find((r) => r.role === "assistant")!.id,
        };
      } catch (err) {
        await client.query("ROLLBACK").catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },

    async proposal(t, messageId) {
      if (!/^\d{1,18}$/.test(messageId)) return null;
      const { rows } = await deps.pool.query<{ proposal: ChatProposal | null }>(
        `SELECT proposal FROM chat_messages
          WHERE id = $1::bigint AND workspace_id = $2 AND dashboard_id = $3 AND user_sub = $4 AND role = 'assistant'
            AND ($5::timestamptz IS NULL OR created_at >= $5::timestamptz)`,
        [messageId, t.workspaceId, t.dashboardId, t.userSub, cutoff(now())],
      );
      return rows[0]?.proposal ?? null;
    },

    async clear(t) {
      const res = await deps.pool.query("DELETE FROM chat_messages WHERE workspace_id = $1 AND dashboard_id = $2 AND user_sub = $3", [
        t.workspaceId,
        t.dashboardId,
        t.userSub,
      ]);
      return res.rowCount ?? 0;
    },
  };
}
