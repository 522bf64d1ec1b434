/**
 * The SQL editor's colours, light and dark: the editor's background and text, and one colour per kind of SQL
 * token, each at least 4.5:1 against that background (checked in sql-highlight.test.ts, and in the browser by the
 * editor's contrast test). CodeMirror's default highlight style is made for a light background: its purple
 * keywords on the dark page were below 3:1.
 */
import { HighlightStyle, syntaxHighlighting } from "@codemirror/language";
import type { Extension } from "@codemirror/state";
import { EditorView } from "@codemirror/view";
import { type Tag, tags as t } from "@lezer/highlight";

/** The kinds of token @codemirror/lang-sql marks, by the name its palette uses. */
export type SqlTokenKind = "keyword" | "type" | "builtin" | "number" | "string" | "literal" | "quoted" | "special" | "comment";

export interface SqlPalette {
  /** The editor's background: the page's surface in that scheme. */
  background: string;
  /** Plain text: names, operators, punctuation. */
  text: string;
  tokens: Record<SqlTokenKind, string>;
}

/** Light and dark palettes; backgrounds and text are the page's `--surface` and `--text` (web/styles.css). */
export const SQL_PALETTES: Record<"light" | "dark", SqlPalette> = {
  light: {
    background: "#ffffff",
    text: "#1c2330",
    tokens: {
      keyword: "#7a1fa2",
      type: "#0b5cad",
      builtin: "#0b5cad",
      number: "#116329",
      string: "#a31515",
      literal: "#116329",
      quoted: "#8a4b00",
      special: "#8a4b00",
      comment: "#5c6675",
    },
  },
  dark: {
    background: "#171c25",
    text: "#e4e8ee",
    tokens: {
      keyword: "#d2a8ff",
      type: "#79c0ff",
      builtin: "#79c0ff",
      number: "#7ee2a8",
      string: "#ffa198",
      literal: "#7ee2a8",
      quoted: "#f2cc60",
      special: "#f2cc60",
      comment: "#b4bdc9",
    },
  },
};

/** The lezer tags of each kind (lang-sql's styleTags). */
const TAGS: Record<SqlTokenKind, Tag | Tag[]> = {
  keyword: t.keyword,
  type: t.typeName,
  builtin: t.standard(t.name),
  number: t.number,
  string: t.string,
  literal: [t.bool, t.null],
  quoted: t.special(t.string),
  special: t.special(t.name),
  comment: [t.lineComment, t.blockComment, t.comment],
};

/** The editor's look for one scheme: background, text, caret, and the token colours (comments in italics). */
export function sqlScheme(dark: boolean): Extension {
  const p = SQL_PALETTES[dark ? "dark" : "light"];
  const style = HighlightStyle.define(
    (Object.keys(TAGS) as SqlTokenKind[]).map((kind) => ({
      tag: TAGS[kind],
      color: p.tokens[kind],
      ...(kind === "comment" ? { fontStyle: "italic" } : {}),
      ...(kind === "keyword" ? { fontWeight: "600" } : {}),
    })),
    { themeType: dark ? "dark" : "light" },
  );
  return [
    EditorView.darkTheme.of(dark),
    EditorView.theme(
      {
        "&": { backgroundColor: p.background, color: p.text },
        ".cm-content": { caretColor: p.text },
        ".cm-gutters": { color: dark ? "#9da7b5" : "#5c6675" },
        // The selected completion while the list waits for new results: CodeMirror's grey (#777 under white text,
        // 4.48:1) is below 4.5:1 in the light theme.
        ".cm-tooltip-autocomplete-disabled ul li[aria-selected]": { background: dark ? "#444" : "#666", color: "white" },
      },
      { dark },
    ),
    syntaxHighlighting(style),
  ];
}
