import { beforeAll, beforeEach, describe, expect, test } from "vitest";
import type { AiTestApp } from "../../testing/ai-harness.ts";
import { type SeededAiFixture, useAiRouteFixture } from "../../testing/ai-route-fixture.ts";

const ai = useAiRouteFixture();
const NOW = Date.UTC(2026, 7, 1, 10, 0, 0);
const DAY = 86_400_000;
const clock = { t: NOW };

const DRAFT = {
  summary: "HTTP request metrics of the web tier.",
  tables: [
    {
      table: "public.http_requests",
      description: "One row per HTTP request.",
      timeColumn: "ts",
      units: [
        { column: "latency_ms", unit: "ms" },
        { column: "made_up", unit: "s" },
      ],
      suggestedPanels: [{ title: "p95 latency", type: "timeseries", description: "95th percentile of latency_ms per minute" }],
    },
    { table: "services", description: "Service catalogue.", timeColumn: null },
    { table: "public.imaginary", description: "Does not exist." },
  ],
};

describe.each(["chat", "responses"] as const)("source draft and generation log over the %s API", (api) => {
  let t: AiTestApp;
  let f: SeededAiFixture;
  beforeAll(async () => {
    ({ t, f } = await ai.seededApp({
      clock,
      api,
      refreshedAt: new Date(NOW - DAY),
      env: {
        GENERATION_LOG_RETENTION_DAYS: "10",
      },
    }));
  });
  beforeEach(() => {
    clock.t = NOW;
    ai.fake.reset();
  });

  const draft = (sourceId: string, body?: unknown) =>
    t.app.request(`/api/sources/${sourceId}/draft`, {
      method: "POST",
      headers: { cookie: f.cookies.admin!, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });

  test("drafts notes from the catalog for review; invented tables and columns are left out; nothing is saved", async () => {
    ai.fake.enqueue({ kind: "text", text: JSON.stringify(DRAFT), usage: { input: 800, output: 300 } });
    const res = await draft(f.sourceId, { instructions: "mention units" });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.draft.tables.map((x: { table: string }) => x.table)).toEqual(["public.http_requests", "public.services"]);
    expect(body.draft.tables[0].units).toEqual([{ column: "latency_ms", unit: "ms" }]);
    expect(body.warnings).toEqual([expect.stringContaining("public.imaginary")]);
    expect(body.notes).toContain("## public.http_requests");
    expect(body.notes).toContain("Units: latency_ms (ms)");
    expect(body.notes).toContain("- p95 latency (timeseries)");
    expect(ai.fake.requests[0]!.text).toContain("public.http_requests (time column: ts)");
    expect(ai.fake.requests[0]!.text).toContain("mention units");
    const src = await ai.store.pool.query("SELECT notes FROM sources WHERE id = $1", [f.sourceId]);
    expect(src.rows[0].notes).toBe("");
  });

  test("saved notes feed later generations", async () => {
    await ai.store.pool.query("UPDATE sources SET notes = $2 WHERE id = $1", [
      f.sourceId,
      "latency_ms is in milliseconds; status 5xx are errors",
    ]);
    ai.fake.enqueue({ kind: "text", text: JSON.stringify({ title: "x", panels: [] }) });
    await t.app.request(`/api/workspaces/${f.workspace.id}/generate`, {
      method: "POST",
      headers: { cookie: f.cookies.editor!, "content-type": "application/json" },
      body: JSON.stringify({ prompt: "latency", sourceId: f.sourceId }),
    });
    expect(ai.fake.requests[0]!.text).toContain("latency_ms is in milliseconds");
    await ai.store.pool.query("UPDATE sources SET notes = '' WHERE id = $1", [f.sourceId]);
  });

  test("a never-refreshed catalog is 422 catalog_missing; a schema-violating draft is 502", async () => {
    const missing = await draft(f.neverRefreshedId);
    expect(missing.status).toBe(422);
    expect((await missing.json()).code).toBe("catalog_missing");
    ai.fake.enqueue({ kind: "text", text: JSON.stringify({ summary: 3 }), usage: { input: 5, output: 5 } });
    const bad = await draft(f.sourceId);
    expect(bad.status).toBe(502);
    expect((await bad.json()).code).toBe("ai_provider_error");
  });

  test("the admin lists the log newest first, paged; rows past GENERATION_LOG_RETENTION_DAYS are never returned and are swept on write", async () => {
    const list = async (q = "") => {
      const res = await t.app.request(`/api/workspaces/${f.workspace.id}/generation-log${q}`, { headers: { cookie: f.cookies.admin! } });
      expect(res.status).toBe(200);
      return (await res.json()) as { entries: { id: string; route: string; outcome: string; createdAt: string }[]; retentionDays: number };
    };
    const all = await list();
    expect(all.retentionDays).toBe(10);
    expect(all.entries.length).toBeGreaterThanOrEqual(3);
    expect(all.entries[0]).toMatchObject({ route: "source_draft", outcome: "invalid_output" });
    const page = await list(`?limit=1&before=${all.entries[0]!.id}`);
    expect(page.entries).toHaveLength(1);
    expect(page.entries[0]!.id).toBe(all.entries[1]!.id);
    expect(
      (await t.app.request(`/api/workspaces/${f.workspace.id}/generation-log?limit=0`, { headers: { cookie: f.cookies.admin! } })).status,
    ).toBe(400);

    clock.t = NOW + 11 * DAY;
    expect((await list()).entries).toEqual([]);
    const raw = await ai.store.pool.query("SELECT count(*)::int AS n FROM generation_log WHERE workspace_id = $1", [f.workspace.id]);
    expect(raw.rows[0].n).toBeGreaterThan(0);
    ai.fake.enqueue({ kind: "text", text: JSON.stringify(DRAFT) });
    expect((await draft(f.sourceId)).status).toBe(200);
    const after = await ai.store.pool.query("SELECT count(*)::int AS n FROM generation_log WHERE workspace_id = $1", [f.workspace.id]);
    expect(after.rows[0].n).toBe(1);
  });
});
