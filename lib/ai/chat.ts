import type { ModelMessage } from "ai";
import { z } from "zod";
import type { DashboardSpec } from "../dashboards/spec.ts";
import { type PanelFailure, type VariableFailure, checkPanels, checkVariables, parseDashboardSpec } from "../dashboards/save.ts";
import type { Guard } from "../sql-guard/verdict.ts";
import type { Dashboard } from "../dashboards/store.ts";
import { AppError } from "../http/errors.ts";
import type pg from "pg";
import type { ChatProposal, ChatStore, ChatThread } from "./chat-store.ts";
import type { GenerationLog, GenerationOutcome } from "./generation-log.ts";
import { type ModelCallError, type ModelCallDeps, type TokenUsage, classifyFailure, deadline, tokensOf } from "./invoke.ts";
import { modelOutputIssue } from "./output-bounds.ts";
import { SQL_RULES, bounded } from "./prompt.ts";
import { loadAiSdk } from "./sdk.ts";

/** Latest results of one panel as the browser has them (bounded; the server runs no SQL for chat). */
export const PanelResultInputSchema = z.object({
  panelId: z.string().max(64),
  columns: z
    .array(z.object({ name: z.string().max(128), type: z.string().max(64).optional() }))
    .max(100)
    .optional(),
  rows: z.array(z.array(z.unknown()).max(100)).max(2000).optional(),
  truncated: z.boolean().optional(),
  error: z.string().max(1000).optional(),
});
export type PanelResultInput = z.infer<typeof PanelResultInputSchema>;

/** Body of POST /api/dashboards/:dashboardId/chat. */
export const ChatRequestSchema = z.object({
  message: z.string().trim().min(1).max(4000),
  panelResults: z.array(PanelResultInputSchema).max(50).optional(),
});
export type ChatRequest = z.infer<typeof ChatRequestSchema>;

/** What the chat stream sends to the browser (one SSE event each; see docs/ai.md). */
export type ChatEvent =
  | { type: "delta"; text: string }
  | { type: "proposal"; messageId: string; proposal: ChatProposal }
  | { type: "proposal_rejected"; detail: string; panels?: PanelFailure[]; variables?: VariableFailure[] }
  | { type: "done"; messageId: string; userMessageId: string; usage: TokenUsage; model: string }
  | { type: "error"; code: string; detail: string };

export interface ChatDeps {
  model: ModelCallDeps;
  pool: pg.Pool;
  guard: Guard;
  chats: ChatStore;
  generationLog: GenerationLog;
  config: { MIN_REFRESH_INTERVAL_MS: number };
}

const PROPOSAL_FENCE = "```proposal";
const MAX_SPEC_CHARS = 16_000;
const MAX_RESULTS_CHARS = 8_000;
const MAX_RESULT_CHARS_PER_PANEL = 1_200;
const MAX_CELL_CHARS = 80;
const ROWS_SHOWN = 8;

function cell(v: unknown): string {
  const s = typeof v === "string" ? v : (JSON.stringify(v) ?? "null");
  return s.length > MAX_CELL_CHARS ? `${s.slice(0, MAX_CELL_CHARS)}…` : s;
}

/**
 * A bounded text summary of the latest panel results the browser sent: columns, row count, the
 * last rows (the newest points of a time series) and errors, capped per panel and in total.
 */
export function summarizePanelResults(spec: DashboardSpec, results: PanelResultInput[] | undefined): string {
  if (!results?.length) return "No panel results were sent with this question.";
  const titles = new Map(spec.panels.map((p) => [p.id, p.title]));
  const parts: string[] = [];
  let used = 0;
  for (const r of results) {
    const title = titles.get(r.panelId);
    if (title === undefined) continue; // only panels of this dashboard
    let text: string;
    if (r.error) text = `panel ${r.panelId} "${title}": error: ${r.error}`;
    else {
      const rows = r.rows ?? [];
      const cols = (r.columns ?? []).map((c) => c.name).join(", ");
      const shown = rows.slice(-ROWS_SHOWN).map((row) => row.map(cell).join(" | "));
      text = `panel ${r.panelId} "${title}": ${rows.length} rows${r.truncated ? " (truncated)" : ""}; columns: ${cols || "?"}${
        shown.length ? `\n  last rows:\n  ${shown.join("\n  ")}` : ""
      }`;
    }
    text = bounded(text, MAX_RESULT_CHARS_PER_PANEL);
    if (used + text.length > MAX_RESULTS_CHARS) {
      parts.push("(more panel results were left out)");
      break;
    }
    parts.push(text);
    used += text.length;
  }
  return parts.length ? parts.join("\n") : "No panel results were sent with this question.";
}

function systemPrompt(dashboard: Dashboard, results: string): string {
  return [
    "You are the assistant of a Pulseboard dashboard. Answer questions about the dashboard and its data briefly and concretely.",
    "You cannot run queries. Base answers on the spec and the latest panel results below; say so when they do not contain the answer.",
    "",
    `Dashboard spec (version ${dashboard.version}):`,
    bounded(JSON.stringify(dashboard.spec), MAX_SPEC_CHARS),
    "",
    "Latest panel results (as the person sees them):",
    results,
    "",
    `If the person asks for a change to the dashboard, explain it and end your reply with a block that starts with a line ${PROPOSAL_FENCE}, then the complete new dashboard spec as JSON, then a line \`\`\`. Keep panel ids and sourceIds of unchanged panels. Propose at most one spec per reply and only when asked for a change.`,
    "",
    SQL_RULES,
  ].join("\n");
}

/**
 * Splits streamed text into what the person reads and the trailing proposal block, holding back
 * only as many characters as could still turn out to be the start of the fence.
 */
export class ProposalSplitter {
  visible = "";
  block: string | null = null;
  private pending = "";

  push(text: string): string {
    if (this.block !== null) {
      this.block += text;
      return "";
    }
    this.pending += text;
    const at = this.pending.indexOf(PROPOSAL_FENCE);
    if (at >= 0) {
      const out = this.pending.slice(0, at);
      this.block = this.pending.slice(at + PROPOSAL_FENCE.length);
      this.pending = "";
      this.visible += out;
      return out;
    }
    let keep = 0;
    for (let n = Math.min(PROPOSAL_FENCE.length - 1, this.pending.length); n > 0; n--) {
      if (PROPOSAL_FENCE.startsWith(this.pending.slice(-n))) {
        keep = n;
        break;
      }
    }
    const out = this.pending.slice(0, this.pending.length - keep);
    this.pending = this.pending.slice(this.pending.length - keep);
    this.visible += out;
    return out;
  }

  /** Whatever was held back when the stream ended. */
  flush(): string {
    const out = this.pending;
    this.pending = "";
    this.visible += out;
    return out;
  }
}

/** Parses and checks a proposal block: the same spec validation and guard as any save. */
async function checkProposal(
  deps: ChatDeps,
  workspaceId: string,
  dashboard: Dashboard,
  block: string,
): Promise<{ ok: true; proposal: ChatProposal } | { ok: false; detail: string; panels?: PanelFailure[]; variables?: VariableFailure[] }> {
  const json = block.replace(/```\s*$/, "").trim();
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    return { ok: false, detail: "The proposed change was not valid JSON and was left out." };
  }
  // Held to the limits of a request body before anything else walks it (validation, storage, the log).
  const issue = modelOutputIssue(raw);
  if (issue) return { ok: false, detail: `The proposed change was left out: it ${issue}, past what a request may carry.` };
  let spec: DashboardSpec;
  try {
    spec = parseDashboardSpec(raw, deps.config.MIN_REFRESH_INTERVAL_MS);
  } catch (err) {
    if (err instanceof AppError) return { ok: false, detail: `The proposed change was left out: ${err.detail}` };
    throw err;
  }
  const failures = await checkPanels({ pool: deps.pool, guard: deps.guard }, workspaceId, spec);
  const variables = await checkVariables({ pool: deps.pool, guard: deps.guard }, workspaceId, spec);
  if (failures.length > 0 || variables.length > 0) {
    return {
      ok: false,
      detail: "The proposed change was left out: the SQL guard refused some of its panels or variables.",
      panels: failures,
      ...(variables.length > 0 ? { variables } : {}),
    };
  }
  return { ok: true, proposal: { spec, baseVersion: dashboard.version } };
}

/**
 * Starts one chat turn: replays the person's history on this dashboard, passes the admission gate,
 * and streams the model's answer. Failures before the first token throw (a clean problem+json);
 * later ones arrive as an `error` event. The turn is stored only when the answer is complete.
 */
export async function startChat(
  deps: ChatDeps,
  input: { workspaceId: string; userSub: string; dashboard: Dashboard; request: ChatRequest; signal?: AbortSignal },
): Promise<AsyncGenerator<ChatEvent>> {
  const { dashboard, request } = input;
  const thread: ChatThread = { workspaceId: input.workspaceId, dashboardId: dashboard.id, userSub: input.userSub };
  const scope = { route: "chat" as const, workspaceId: input.workspaceId, userSub: input.userSub };
  const model = deps.model;
  const history = await deps.chats.history(thread);
  const messages: ModelMessage[] = [
    ...history.map(
      (m): ModelMessage =>
        m.role === "user"
          ? { role: "user", content: m.content }
          : { role: "assistant", content: m.proposal ? `${m.content}\n(A spec change was proposed with this answer.)` : m.content },
    ),
    { role: "user", content: request.message },
  ];

  // The SDK and the model load before admission: a load that fails costs the user no rate-limit token.
  const sdk = await loadAiSdk();
  const languageModel = await model.provider.loadModel();
  await model.gate.admit(scope);
  const clock = deadline(model.timeoutMs);
  const signal = input.signal ? AbortSignal.any([clock.signal, input.signal]) : clock.signal;
  const usage: TokenUsage = { input: 0, output: 0 };
  let usageRecorded = false;
  const recordUsage = async () => {
    if (usageRecorded) return;
    usageRecorded = true;
    await model.gate.recordUsage(input.workspaceId, model.provider.modelId, usage);
  };
  const logTurn = (outcome: GenerationOutcome, result: unknown) =>
    deps.generationLog.write({
      workspaceId: input.workspaceId,
      userSub: input.userSub,
      route: "chat",
      prompt: request.message,
      result: { dashboardId: dashboard.id, ...(result as object) },
      model: model.provider.modelId,
      inputTokens: usage.input,
      outputTokens: usage.output,
      outcome,
    });

  const system = systemPrompt(dashboard, summarizePanelResults(dashboard.spec, request.panelResults));
  // Characters the provider read and wrote, for the estimate a cut-off stream is charged (see fail()).
  const promptChars = system.length + messages.reduce((n, m) => n + (typeof m.content === "string" ? m.content.length : 0), 0);
  let streamedChars = 0;
  const result = sdk.streamText({
    model: languageModel,
    system,
    messages,
    maxRetries: 0,
    maxOutputTokens: model.maxOutputTokens,
    abortSignal: signal,
    onError: () => {}, // errors arrive as `error` parts below; the default handler would print them
  });
  const iterator = result.fullStream[Symbol.asyncIterator]();
  // A broken connection can surface as a thrown read instead of an `error` part; treat both alike.
  type Part = Awaited<ReturnType<typeof iterator.next>>;
  const parts = {
    next: async (): Promise<Part> => {
      try {
        return await iterator.next();
      } catch (error) {
        return { done: false, value: { type: "error", error } } as Part;
      }
    },
    return: () => iterator.return?.(),
  };
  const splitter = new ProposalSplitter();

  /**
   * A stream cut by the browser or the deadline ends before the provider's usage report (it comes with
   * the last chunk), yet the provider has read the prompt and billed what it wrote. Without a charge,
   * asking and disconnecting just before the end would dodge LLM_DAILY_TOKEN_BUDGET, so such a turn is
   * charged an estimate (about 4 characters a token) wherever the provider reported nothing.
   */
  const chargeCutOff = () => {
    if (usage.input === 0) usage.input = Math.ceil(promptChars / 4);
    if (usage.output === 0) usage.output = Math.ceil(streamedChars / 4);
  };

  /** Turns an error or abort part into a ModelCallError (with a log line), recording what was reported. */
  const fail = async (err: unknown): Promise<ModelCallError> => {
    const cancelled = !clock.timedOut() && input.signal?.aborted === true;
    if (cancelled || clock.timedOut()) chargeCutOff();
    const failure = classifyFailure(err, { sdk, timedOut: clock.timedOut(), log: model.log, scope, provider: model.provider, usage });
    await recordUsage();
    await logTurn(cancelled ? "cancelled" : failure.outcome, { error: cancelled ? "cancelled" : failure.code });
    return failure;
  };

  // Read until the first text (or the end): a provider that fails at once gets a proper HTTP error.
  const early: string[] = [];
  let finished = false;
  try {
    for (;;) {
      const next = await parts.next();
      if (next.done) {
        finished = true;
        break;
      }
      const p = next.value;
      if (p.type === "text-delta") {
        early.push(p.text);
        streamedChars += p.text.length;
        break;
      }
      if (p.type === "finish-step") {
        const u = tokensOf(p.usage);
        usage.input += u.input;
        usage.output += u.output;
      }
      if (p.type === "finish") {
        finished = true;
        break;
      }
      if (p.type === "error") throw await fail(p.error);
      if (p.type === "abort") throw await fail(new Error("aborted"));
    }
  } catch (err) {
    clock.clear();
    throw err;
  }

  async function* events(): AsyncGenerator<ChatEvent> {
    try {
      for (const t of early) {
        const out = splitter.push(t);
        if (out) yield { type: "delta", text: out };
      }
      while (!finished) {
        const next = await parts.next();
        if (next.done) break;
        const p = next.value;
        if (p.type === "text-delta") {
          streamedChars += p.text.length;
          const out = splitter.push(p.text);
          if (out) yield { type: "delta", text: out };
        } else if (p.type === "finish-step") {
          const u = tokensOf(p.usage);
          usage.input += u.input;
          usage.output += u.output;
        } else if (p.type === "finish") {
          break;
        } else if (p.type === "error" || p.type === "abort") {
          const failure = await fail(p.type === "error" ? p.error : new Error("aborted"));
          yield { type: "error", code: failure.code, detail: failure.detail };
          return;
        }
      }
      const rest = splitter.flush();
      if (rest) yield { type: "delta", text: rest };
      clock.clear();
      await recordUsage();

      let proposal: ChatProposal | null = null;
      let rejected: Extract<ChatEvent, { type: "proposal_rejected" }> | null = null;
      if (splitter.block !== null) {
        // The model has answered and been charged: whatever checking the proposal does, the turn is still
        // stored and logged below (a check that fails leaves the proposal out).
        try {
          const checked = await checkProposal(deps, input.workspaceId, dashboard, splitter.block);
          if (checked.ok) proposal = checked.proposal;
          else rejected = { type: "proposal_rejected", detail: checked.detail, panels: checked.panels, variables: checked.variables };
        } catch (err) {
          model.log.warn("chat proposal could not be checked", {
            workspace: input.workspaceId,
            error: err instanceof Error ? err.name : "error",
          });
          rejected = { type: "proposal_rejected", detail: "The proposed change could not be checked and was left out; try again." };
        }
      }
      const answer = splitter.visible.trim() || (proposal ? "Here is the proposed change." : "(no answer)");
      // The audit row does not hang on the history: a turn the person received in full was answered
      // and billed even when storing it fails, so it is logged either way and the failure re-thrown.
      let ids: { userMessageId: string; assistantMessageId: string } | undefined;
      let storeFailure: unknown;
      try {
        ids = await deps.chats.appendTurn(thread, { question: request.message, answer, proposal });
      } catch (err) {
        storeFailure = err;
      }
      await logTurn("ok", {
        text: answer,
        proposal: proposal?.spec ?? null,
        proposalRejected: rejected?.detail,
        ...(ids ? {} : { turnStored: false }),
      });
      if (!ids) throw storeFailure;
      if (proposal) yield { type: "proposal", messageId: ids.assistantMessageId, proposal };
      if (rejected) yield rejected;
      yield { type: "done", messageId: ids.assistantMessageId, userMessageId: ids.userMessageId, usage, model: model.provider.modelId };
    } finally {
      clock.clear();
      // A consumer that stopped early (browser gone) must not leave the model stream running.
      await parts.return()?.catch(() => {});
      // Stopped between two parts, before any usage was recorded: charged like a cut-off stream.
      if (!usageRecorded) {
        chargeCutOff();
        await recordUsage().catch(() => {});
      }
    }
  }
  return events();
}
