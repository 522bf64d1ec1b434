/**
 * Browser test harness: the demo app (`npm start`: embedded PostgreSQL, demo seed, development identity provider,
 * handlers and stream host on one port) in a child process on a free loopback port, driven by Debian's Chromium
 * through playwright-core. Browser tests are vitest files in this folder (`*.browser.test.ts`); screenshots go to
 * web/e2e/artifacts/ (gitignored), one per page and theme.
 *
 *   const app = await startDemoApp();             // once per file (about 10-20 s)
 *   const browser = await launchChromium();
 *   const page = await signIn(browser, app, "demo-viewer");
 *   await page.goto(app.url(`/dashboards/${app.dashboardId}`));
 *   await screenshots(page, "live");             // live-light.png and live-dark.png
 *   ...
 *   await browser.close(); await app.stop();
 */
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import pg from "pg";
import { type Browser, type BrowserContext, type Page, chromium } from "playwright-core";
import { DEMO_METRICS_DB } from "../../lib/demo/metrics-db.ts";
import { type Running, listenerPort, runScript } from "../../scripts/testing/processes.ts";

/** Debian's Chromium (`apt-get install -y chromium`; .ci/run installs it when missing). */
export const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
/** Where screenshots land (gitignored): kept as test artifacts, never committed. */
export const ARTIFACTS = fileURLToPath(new URL("./artifacts/", import.meta.url));

/**
 * Flags for a quiet, reproducible headless Chromium: no GPU, no QUIC, no first-run UI and no background traffic to
 * Google (updates, sync, field trials). Playwright gives every launch a fresh temporary --user-data-dir of its own.
 */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** A running demo app. */
export interface DemoApp {
  /** `http://localhost:<port>`: the origin sign-in works on (the one registered with the identity provider). */
  origin: string;
  port: number;
  /** The seeded demo dashboard's id. */
  dashboardId: string;
  /** The data folder (embedded PostgreSQL, secrets, built assets); removed by stop(). */
  dataDir: string;
  url(path: string): string;
  /** Everything the process printed so far. */
  output(): string;
  /** Stops the process (Ctrl-C: drain, then PostgreSQL stops) and starts it again on the same port and data. */
  restart(): Promise<void>;
  /** A superuser client on the demo metrics database (the one the demo panels query). Caller ends it. */
  metricsClient(): Promise<pg.Client>;
  /** Stops the process and removes the data folder. */
  stop(): Promise<void>;
}

/**
 * Starts `npm start` (scripts/start.ts) on a free port with a fresh data folder and waits until it serves. `env`
 * adds configuration variables to the process's (kept across restart()).
 */
export async function startDemoApp(opts: { env?: Record<string, string> } = {}): Promise<DemoApp> {
  const dataDir = await mkdtemp(join(tmpdir(), "pulseboard-e2e-"));
  // As root, the embedded server runs as a `postgres` system user, who must reach the data folder.
  await chmod(dataDir, 0o755);
  const port = await listenerPort();
  const origin = `http://localhost:${port}`;
  let running = await launch(port, dataDir, opts.env);
  const dashboardId = /demo dashboard: \S+\/dashboards\/(db_\S+)/.exec(running.output())?.[1];
  if (!dashboardId) {
    await stopProcess(running);
    throw new Error(`the demo printed no dashboard:\n${running.output()}`);
  }
  let earlier = "";
  return {
    origin,
    port,
    dashboardId,
    dataDir,
    url: (path) => `${origin}${path}`,
    output: () => earlier + running.output(),
    async restart() {
      await stopProcess(running);
      earlier += running.output();
      running = await launch(port, dataDir, opts.env);
    },
    async metricsClient() {
      const pid = await readFile(join(dataDir, "pg", "postmaster.pid"), "utf8");
      const pgPort = Number(pid.split("\n")[3]);
      const password = (await readFile(join(dataDir, "pg-password"), "utf8")).trim();
      const client = new pg.Client({ host: "127.0.0.1", port: pgPort, user: "postgres", password, database: DEMO_METRICS_DB });
      await client.connect();
      return client;
    },
    async stop() {
      await stopProcess(running);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

async function launch(port: number, dataDir: string, extra: Record<string, string> = {}): Promise<Running> {
  const { DATABASE_URL: _, OIDC_ISSUER: __, ...env } = process.env;
  const running = runScript("scripts/start.ts", { ...env, ...extra, PORT: String(port), PULSEBOARD_DATA_DIR: dataDir, NODE_ENV: "" });
  await running.waitFor("Ctrl-C drains and stops", 120_000);
  return running;
}

async function stopProcess(running: Running): Promise<void> {
  if (running.child.exitCode !== null || running.child.signalCode !== null) return;
  running.child.kill("SIGINT");
  const killed = setTimeout(() => running.child.kill("SIGKILL"), 30_000);
  await running.exited;
  clearTimeout(killed);
}

/** Launches headless Chromium (`extraArgs` after the suite's own); throws with the install command when it is missing. */
export async function launchChromium(extraArgs: readonly string[] = []): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: [...CHROMIUM_ARGS, ...extraArgs] });
}

/**
 * A module's text bundled for a blank page as the web build bundles (ES2022, browser), resolved from `dir`: the
 * script and the stylesheet its imports pull in (empty when none), for a test that drives one piece of the page alone.
 */
export async function bundleForPage(entry: string, dir: string): Promise<{ js: string; css: string }> {
  const out = await esbuild.build({
    stdin: { contents: entry, resolveDir: dir, loader: "ts" },
    bundle: true,
    write: false,
    outdir: "out",
    format: "esm",
    platform: "browser",
    target: ["es2022"],
    logLevel: "silent",
  });
  return {
    js: out.outputFiles.find((f) => f.path.endsWith(".js"))!.text,
    css: out.outputFiles.find((f) => f.path.endsWith(".css"))?.text ?? "",
  };
}

/** Options for a browser context (one per signed-in user). */
export interface ContextOptions {
  colorScheme?: "light" | "dark";
  viewport?: { width: number; height: number };
  timezoneId?: string;
}

/**
 * A new browser context signed in as `userId` (demo-viewer, demo-editor, demo-admin) through the development
 * identity provider, as a person would: the app's login, the provider's user list, Allow, back to the app.
 * Returns a page on the app, after the sign-in.
 */
export async function signIn(browser: Browser, app: DemoApp, userId: string, opts: ContextOptions = {}): Promise<Page> {
  const context: BrowserContext = await browser.newContext({
    colorScheme: opts.colorScheme ?? "light",
    viewport: opts.viewport ?? { width: 1280, height: 900 },
    timezoneId: opts.timezoneId ?? "UTC",
    acceptDownloads: true,
  });
  const page = await context.newPage();
  await page.goto(app.url("/api/auth/login?returnTo=%2F"));
  await page.locator(`button[name="user"][value="${userId}"]`).click();
  const allow = page.locator('button[name="allow"]');
  // The consent page shows once per user and client; a repeat sign-in goes straight back to the app.
  await Promise.race([
    allow.waitFor({ state: "visible", timeout: 15_000 }).then(() => allow.click()),
    page.waitForURL((u) => u.origin === app.origin, { timeout: 15_000 }),
  ]);
  await page.waitForURL((u) => u.origin === app.origin && !u.pathname.startsWith("/api/"), { timeout: 15_000 });
  return page;
}

/** Screenshots of the page in light and dark: ARTIFACTS/<name>-light.png and <name>-dark.png. Returns the paths. */
export async function screenshots(page: Page, name: string): Promise<string[]> {
  await mkdir(ARTIFACTS, { recursive: true });
  const paths: string[] = [];
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    // Let canvases redraw in the new palette.
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const path = join(ARTIFACTS, `${name}-${scheme}.png`);
    await page.screenshot({ path, fullPage: true });
    paths.push(path);
  }
  await page.emulateMedia({ colorScheme: null });
  return paths;
}
