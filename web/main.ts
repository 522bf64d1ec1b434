// The browser entry: one bundle for every page; the server's shell names the page in data-page.
import "./styles.css";
import { bootAccount } from "./pages/account.ts";
import { bootAdminWorkspaces } from "./pages/admin-workspaces.ts";
import { bootAudit } from "./pages/audit.ts";
import { bootEditor } from "./pages/editor.ts";
import { bootGenerate } from "./pages/generate.ts";
import { bootList } from "./pages/list.ts";
import { bootLive } from "./pages/live.ts";
import { bootSources } from "./pages/sources.ts";
import { bootTokens } from "./pages/tokens.ts";

const PAGES: Record<string, () => void> = {
  list: bootList,
  live: bootLive,
  editor: bootEditor,
  generate: bootGenerate,
  sources: bootSources,
  account: bootAccount,
  tokens: bootTokens,
  audit: bootAudit,
  "admin-workspaces": bootAdminWorkspaces,
};

function boot(): void {
  const page = document.body.dataset.page ?? "";
  try {
    PAGES[page]?.();
  } catch (err) {
    const main = document.getElementById("main");
    const p = document.createElement("p");
    p.className = "notice error";
    p.setAttribute("role", "alert");
    p.textContent = `This page failed to start: ${err instanceof Error ? err.message : String(err)}`;
    main?.prepend(p);
  }
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
else boot();
