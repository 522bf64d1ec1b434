// The browser entry: one bundle for every page; the server's shell names the page in data-page. The editor
// (CodeMirror, about 80% of the code) is a chunk of its own, imported only by its page.
// uPlot's stylesheet is imported here too, so that main.css carries it for every page (web/build.ts); after ours,
// where the charts' own import put it before the split.
import "./styles.css";
import "uplot/dist/uPlot.min.css";
import { bootAccount } from "./pages/account.ts";
import { bootAdminWorkspaces } from "./pages/admin-workspaces.ts";
import { bootAudit } from "./pages/audit.ts";
import { bootGenerate } from "./pages/generate.ts";
import { bootList } from "./pages/list.ts";
import { bootLive } from "./pages/live.ts";
import { bootSources } from "./pages/sources.ts";
import { bootTokens } from "./pages/tokens.ts";

const PAGES: Record<string, () => void | Promise<void>> = {
  list: bootList,
  live: bootLive,
  editor: () => import("./pages/editor.ts").then((m) => m.bootEditor()),
  generate: bootGenerate,
  sources: bootSources,
  account: bootAccount,
  tokens: bootTokens,
  audit: bootAudit,
  "admin-workspaces": bootAdminWorkspaces,
};

function showBootError(err: unknown): void {
  const main = document.getElementById("main");
  const p = document.createElement("p");
  p.className = "notice error";
  p.setAttribute("role", "alert");
  p.textContent = `This page failed to start: ${err instanceof Error ? err.message : String(err)}`;
  main?.prepend(p);
}

function boot(): void {
  const page = document.body.dataset.page ?? "";
  try {
    // A lazily loaded page fails later (its chunk could not be fetched): that is shown the same way.
    void Promise.resolve(PAGES[page]?.()).catch(showBootError);
  } catch (err) {
    showBootError(err);
  }
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
else boot();
