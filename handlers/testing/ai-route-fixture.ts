import { afterAll, beforeAll } from "vitest";
import { loadGuardParser } from "../../lib/sql-guard/index.ts";
import { createTestConfigStore } from "../../lib/testing/pg.ts";
import { type FakeOpenAI, startFakeOpenAI } from "../../lib/ai/testing/fake-openai.ts";
import { type AiTestApp, buildAiApp, seedAiFixture } from "./ai-harness.ts";

export type SeededAiFixture = Awaited<ReturnType<typeof seedAiFixture>>;

/** Test-only: what an AI route test file shares, one config store and one fake OpenAI-compatible server. */
export interface AiRouteFixture {
  readonly store: Awaited<ReturnType<typeof createTestConfigStore>>;
  readonly fake: FakeOpenAI;
  /** The AI_* variables of the compat provider pointed at the fake server (over `api` when given). */
  providerEnv(api?: "chat" | "responses"): Record<string, string>;
  /** buildAiApp on the store with providerEnv(api) plus `env`, then seedAiFixture for its sessions. */
  seededApp(opts: {
    clock: { t: number };
    api?: "chat" | "responses";
    env?: Record<string, string>;
    refreshedAt: Date;
  }): Promise<{ t: AiTestApp; f: SeededAiFixture }>;
}

/**
 * Registers the file's beforeAll (guard parser, config store, fake server) and afterAll (closes both);
 * call it at module scope, before the file's own hooks.
 */
export function useAiRouteFixture(): AiRouteFixture {
  let store: AiRouteFixture["store"] | undefined;
  let fake: FakeOpenAI | undefined;
  beforeAll(async () => {
    await loadGuardParser();
    store = await createTestConfigStore();
    fake = await startFakeOpenAI();
  });
  afterAll(async () => {
    await fake?.close();
    await store?.close();
  });
  const fixture: AiRouteFixture = {
    get store() {
      if (!store) throw new Error("the AI route fixture is used before its beforeAll ran");
      return store;
    },
    get fake() {
      if (!fake) throw new Error("the AI route fixture is used before its beforeAll ran");
      return fake;
    },
    providerEnv(api) {
      const env: Record<string, string> = {
        AI_PROVIDER: "compat",
        AI_MODEL: "fake-model",
        AI_COMPAT_BASE_URL: fixture.fake.baseURL,
        AI_COMPAT_API_KEY: fixture.fake.apiKey,
      };
      if (api) env.AI_COMPAT_API = api;
      return env;
    },
    async seededApp(opts) {
      const { pool, url } = fixture.store;
      const t = buildAiApp({ pool, url, clock: opts.clock, env: { ...fixture.providerEnv(opts.api), ...opts.env } });
      const f = await seedAiFixture(pool, t.sessions, t.config.SESSION_COOKIE_NAME, { refreshedAt: opts.refreshedAt });
      return { t, f };
    },
  };
  return fixture;
}
