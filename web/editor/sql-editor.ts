/**
 * The panel SQL editor: CodeMirror 6 with its SQL language package (PostgreSQL dialect), completion of the
 * source's catalog tables and columns, the `$__` macros and the dashboard's variables, and the server's guard
 * verdict as you type (debounced; the refused name or syntax error underlined through @codemirror/lint).
 */
import { autocompletion, type CompletionContext, type CompletionResult } from "@codemirror/autocomplete";
import { PostgreSQL, sql } from "@codemirror/lang-sql";
import { type Diagnostic, linter, lintGutter } from "@codemirror/lint";
import { Compartment, EditorState } from "@codemirror/state";
import { EditorView, keymap, ViewPlugin } from "@codemirror/view";
import { basicSetup } from "codemirror";
import { sqlScheme } from "./sql-highlight.ts";

/** The guard's verdict as the check route sends it. */
export type SqlVerdict = { ok: true } | { ok: false; reason: string; message: string; location?: number };

export interface Catalog {
  tables: { schema: string; name: string; columns: { name: string }[] }[];
}

export interface SqlEditorOptions {
  parent: HTMLElement;
  doc: string;
  /** The source's catalog (tables and columns to complete); null when unknown. */
  catalog: () => Catalog | null;
  /** The dashboard's variable names. */
  variables: () => string[];
  /** The server's verdict on the text (null: nothing to say, e.g. no source yet). */
  check: (sql: string) => Promise<SqlVerdict | null>;
  onChange: (sql: string) => void;
  onVerdict?: (verdict: SqlVerdict | null) => void;
  /** Milliseconds of quiet typing before the verdict is asked for. */
  delay?: number;
  label?: string;
}

export const MACROS = [
  { label: "$__timeFilter(ts)", detail: "column BETWEEN range start AND end" },
  { label: "$__timeGroup(ts, $__interval)", detail: "time bucket" },
  { label: "$__timeFrom()", detail: "range start" },
  { label: "$__timeTo()", detail: "range end" },
  { label: "$__interval", detail: "bucket width for the range" },
];

/** Where a diagnostic ends: the end of the name (or quoted name, or token) starting at `from`. */
export function tokenEnd(text: string, from: number): number {
  if (from >= text.length) return text.length;
  if (text[from] === '"') {
    const close = text.indexOf('"', from + 1);
    return close === -1 ? text.length : close + 1;
  }
  const m =
    /^(?:\$__[A-Za-z]+(?:\([^)]*\))?|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|--[^\n]*|\/\*[\s\S]*?\*\/|[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*|\S)/.exec(
      text.slice(from, from + 400),
    );
  return from + (m ? m[0].length : 1);
}

/** The lint diagnostic of a verdict on `text`. */
export function diagnosticOf(text: string, v: SqlVerdict): Diagnostic | null {
  if (v.ok) return null;
  const from = Math.min(v.location ?? 0, text.length);
  const to =
    v.location === undefined ? Math.max(from + 1, text.indexOf("\n") === -1 ? text.length : text.indexOf("\n")) : tokenEnd(text, from);
  return { from, to: Math.min(Math.max(to, from), text.length), severity: "error", source: `guard: ${v.reason}`, message: v.message };
}

export interface SqlEditor {
  view: EditorView;
  setDoc(text: string): void;
  /** Re-reads catalog and variables for completion. */
  refresh(): void;
}

export function createSqlEditor(o: SqlEditorOptions): SqlEditor {
  const lang = new Compartment();
  const schemaOf = () => {
    const schema: Record<string, string[]> = {};
    for (const t of o.catalog()?.tables ?? []) {
      const cols = t.columns.map((c) => c.name);
      schema[t.name] = cols;
      if (t.schema !== "public") schema[`${t.schema}.${t.name}`] = cols;
    }
    return schema;
  };
  const language = () => sql({ dialect: PostgreSQL, schema: schemaOf(), upperCaseKeywords: true });

  const dollarCompletions = (ctx: CompletionContext): CompletionResult | null => {
    const word = ctx.matchBefore(/\$[\w{]*/);
    if (!word) return null;
    return {
      from: word.from,
      options: [
        ...MACROS.map((m) => ({ label: m.label, detail: m.detail, type: "function" })),
        ...o.variables().map((v) => ({ label: `$${v}`, detail: "dashboard variable", type: "variable" })),
      ],
      validFor: /^\$[\w{]*$/,
    };
  };

  const guardLint = linter(
    async (view) => {
      const text = view.state.doc.toString();
      const verdict = await o.check(text).catch(() => null);
      // The text may have changed while the server answered; the linter asks again after the next change.
      if (view.state.doc.toString() !== text) return [];
      o.onVerdict?.(verdict);
      const d = verdict ? diagnosticOf(text, verdict) : null;
      return d ? [d] : [];
    },
    { delay: o.delay ?? 300 },
  );

  // CodeMirror puts its styles in a <style> element of the document, which the pages' CSP (style-src 'self')
  // blocks; without them .cm-content loses `white-space: pre-wrap` and Chromium types no-break spaces into the
  // SQL (a syntax error for PostgreSQL). In a shadow root it uses a constructed stylesheet (adoptedStyleSheets),
  // which the CSP allows, so the editor lives in one.
  const root = o.parent.shadowRoot ?? o.parent.attachShadow({ mode: "open" });
  // Light or dark follows the page's colour scheme, also when it changes while the editor is open.
  const scheme = new Compartment();
  const darkQuery = typeof matchMedia === "function" ? matchMedia("(prefers-color-scheme: dark)") : null;
  const followScheme = ViewPlugin.define((v) => {
    const follow = () => v.dispatch({ effects: scheme.reconfigure(sqlScheme(darkQuery?.matches ?? false)) });
    darkQuery?.addEventListener("change", follow);
    return { destroy: () => darkQuery?.removeEventListener("change", follow) };
  });
  const view = new EditorView({
    parent: root,
    root,
    state: EditorState.create({
      doc: o.doc,
      extensions: [
        basicSetup,
        lang.of(language()),
        PostgreSQL.language.data.of({ autocomplete: dollarCompletions }),
        autocompletion({ activateOnTyping: true }),
        guardLint,
        lintGutter(),
        keymap.of([]),
        EditorView.lineWrapping,
        scheme.of(sqlScheme(darkQuery?.matches ?? false)),
        followScheme,
        // The page's stylesheet does not reach into the shadow root: the editor's own look is set here.
        EditorView.theme({
          "&": { minHeight: "8rem", fontSize: "0.9rem" },
          ".cm-scroller": { fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace", minHeight: "8rem" },
          ".cm-gutters": { backgroundColor: "transparent" },
          "&.cm-focused": { outline: "2px solid #2f6fd6" },
        }),
        EditorView.contentAttributes.of({ "aria-label": o.label ?? "SQL" }),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) o.onChange(u.state.doc.toString());
        }),
      ],
    }),
  });

  return {
    view,
    setDoc(text) {
      if (text === view.state.doc.toString()) return;
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
    },
    refresh() {
      view.dispatch({ effects: lang.reconfigure(language()) });
    },
  };
}
