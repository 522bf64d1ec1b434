import { ApiError, api, errorText, loginHref, toApiError } from "../lib/api.ts";
import { h, replace } from "../lib/dom.ts";
import { createSseParser } from "../lib/sse-parser.ts";

interface ChatProposal {
  spec: { title: string; panels: { id: string; title: string; type: string }[] };
  baseVersion: number;
}

interface ChatMessage {
  id: string;
  role: "user" | "assistant";
  content: string;
  proposal: ChatProposal | null;
  createdAt: string;
}

interface ChatHistory {
  messages: ChatMessage[];
  maxMessages?: number;
  retentionDays?: number;
  model?: string | null;
}

/** The latest panel results the live page holds; sent with a question so the model sees what you see. */
export type PanelResultsProvider = () => {
  panelId: string;
  columns?: { name: string; type?: string }[];
  rows?: unknown[][];
  truncated?: boolean;
  error?: string;
}[];

/**
 * The chat side panel of a live dashboard: my history, a question box, the streamed answer, and an
 * Apply button for a proposed spec change (editors; a stale dashboard version gets a clear 409).
 */
export function mountChat(o: {
  dashboardId: string;
  toggle: HTMLElement;
  aside: HTMLElement;
  canApply?: () => boolean;
  panelResults?: PanelResultsProvider;
  onApplied?: () => void;
  onError: (err: unknown) => void;
}): void {
  const base = `/api/dashboards/${encodeURIComponent(o.dashboardId)}/chat`;
  let loaded = false;
  let busy = false;

  const log = h("ol", { class: "chat-log", "aria-live": "polite", "aria-label": "Conversation" });
  const input = h("textarea", {
    id: "chat-input",
    rows: 3,
    maxlength: 4000,
    placeholder: "Why did p95 latency jump at 14:00?",
    required: true,
  });
  const send = h("button", { type: "submit", class: "primary" }, "Ask");
  const state = h("span", { class: "muted small", role: "status" });
  const model = h("p", { class: "muted small" });
  const clear = h("button", { type: "button", class: "link" }, "Clear history");
  const form = h(
    "form",
    { class: "chat-form" },
    h("label", { for: "chat-input", class: "sr-only" }, "Your question"),
    input,
    h("div", { class: "row" }, send, state),
  );
  replace(o.aside, h("div", { class: "chat-head" }, h("h2", null, "Ask about this dashboard"), clear), model, log, form);

  o.toggle.addEventListener("click", () => {
    const open = o.aside.hidden;
    o.aside.hidden = !open;
    o.toggle.setAttribute("aria-expanded", String(open));
    document.body.classList.toggle("chat-open", open);
    if (open) {
      if (!loaded) void load();
      input.focus();
    }
  });

  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.metaKey || e.ctrlKey)) form.requestSubmit();
  });

  clear.addEventListener("click", async () => {
    if (!confirm("Delete your chat history on this dashboard?")) return;
    try {
      await api("DELETE", base);
      replace(log);
      empty();
    } catch (err) {
      o.onError(err);
    }
  });

  async function load(): Promise<void> {
    replace(log, h("li", { class: "muted" }, "Loading your conversation…"));
    try {
      const hist = await api<ChatHistory>("GET", base);
      loaded = true;
      model.textContent = hist.model ? `Model: ${hist.model}. Only you see this conversation.` : "AI is not configured on this server.";
      if (!hist.model) {
        send.setAttribute("disabled", "");
      }
      replace(log);
      for (const m of hist.messages) log.append(messageItem(m));
      if (hist.messages.length === 0) empty();
      log.lastElementChild?.scrollIntoView({ block: "end" });
    } catch (err) {
      replace(log, h("li", { class: "error" }, errorText(err)));
    }
  }

  function empty(): void {
    log.append(
      h(
        "li",
        { class: "muted chat-empty" },
        "Ask a question about the panels you are looking at. Answers use the dashboard's latest results.",
      ),
    );
  }

  function messageItem(m: Pick<ChatMessage, "id" | "role" | "content" | "proposal">): HTMLLIElement {
    return h(
      "li",
      { class: `msg ${m.role}` },
      h("div", { class: "msg-who" }, m.role === "user" ? "You" : "Assistant"),
      h("div", { class: "msg-text" }, m.content),
      m.proposal ? proposalBox(m.id, m.proposal) : null,
    );
  }

  function proposalBox(messageId: string, p: ChatProposal): HTMLElement {
    const note = h("p", { class: "small", role: "status" });
    const apply = h("button", { type: "button", class: "primary" }, "Apply this change");
    apply.addEventListener("click", async () => {
      apply.setAttribute("disabled", "");
      note.textContent = "Saving…";
      try {
        await api("POST", `${base}/apply`, { messageId });
        note.textContent = "Applied. The dashboard updates in a moment.";
        o.onApplied?.();
      } catch (err) {
        apply.removeAttribute("disabled");
        note.textContent =
          err instanceof ApiError && err.status === 409
            ? "The dashboard changed since this was proposed, so it was not applied. Ask again to get a proposal for the current version."
            : err instanceof ApiError && err.status === 403
              ? "Only editors can apply changes."
              : errorText(err);
        note.className = "small error";
      }
    });
    return h(
      "div",
      { class: "proposal" },
      h(
        "p",
        null,
        h("strong", null, "Proposed change: "),
        `“${p.spec.title}” with ${p.spec.panels.length} panel${p.spec.panels.length === 1 ? "" : "s"}`,
      ),
      h(
        "ul",
        { class: "small" },
        p.spec.panels.slice(0, 12).map((x) => h("li", null, `${x.title} (${x.type})`)),
      ),
      o.canApply && !o.canApply() ? h("p", { class: "muted small" }, "Only editors can apply changes.") : apply,
      note,
    );
  }

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const message = input.value.trim();
    if (!message || busy || send.hasAttribute("disabled")) return;
    busy = true;
    send.setAttribute("disabled", "");
    state.textContent = "Thinking…";
    log.querySelector(".chat-empty")?.remove();
    log.append(messageItem({ id: "", role: "user", content: message, proposal: null }));
    const text = h("div", { class: "msg-text" });
    const item = h("li", { class: "msg assistant pending" }, h("div", { class: "msg-who" }, "Assistant"), text);
    log.append(item);
    item.scrollIntoView({ block: "end" });
    try {
      const res = await fetch(base, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream" },
        credentials: "same-origin",
        body: JSON.stringify({ message, panelResults: o.panelResults?.() }),
      });
      if (res.status === 401) location.assign(loginHref());
      if (!res.ok || !res.body) throw await toApiError(res);
      input.value = "";
      const parser = createSseParser();
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        for (const m of parser.feed(value)) {
          if (m.kind !== "event") continue;
          const data = JSON.parse(m.data) as Record<string, unknown>;
          if (m.event === "delta") {
            text.append(String(data.text ?? ""));
            item.scrollIntoView({ block: "end" });
          } else if (m.event === "proposal") {
            item.append(proposalBox(String(data.messageId), data.proposal as ChatProposal));
          } else if (m.event === "proposal_rejected") {
            item.append(
              h("p", { class: "small warn" }, `A proposed change was not offered: ${String(data.detail ?? "it did not pass the checks")}`),
            );
          } else if (m.event === "error") {
            item.append(h("p", { class: "small error" }, String(data.detail ?? "The answer could not be completed.")));
          }
        }
      }
      state.textContent = "";
    } catch (err) {
      item.append(h("p", { class: "small error" }, errorText(err)));
      state.textContent = "";
    } finally {
      item.classList.remove("pending");
      busy = false;
      send.removeAttribute("disabled");
    }
  });
}
