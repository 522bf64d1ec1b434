import type { Panel } from "../lib/dashboards/spec.ts";
import { type PanelDeltaFrame, type PanelUpdate, type QueryResult, elapsedMs } from "../lib/live/frames.ts";
import { type IncrementalVerdict, rowsOfBuckets, splice, tickWindows } from "../lib/live/incremental.ts";
import { intervalFor, intervalLiteralMs } from "../lib/sql-guard/interval.ts";
import type { LoadedDashboard, PlanPanel, RunPanel, TickRange } from "./poller.ts";

export interface IncrementalOptions {
  /** How late a row may arrive after its own time and still be counted (INCREMENTAL_LATE_ROWS_MS). */
  lateRowsMs: number;
  /** A full query every this many ticks of a panel; 0 turns incremental ticks off (INCREMENTAL_FULL_QUERY_EVERY_TICKS). */
  fullEvery: number;
  /** MAX_WINDOW_POINTS, for the `$__interval` of a range. */
  maxWindowPoints: number;
  /** MAX_QUERY_ROWS: a splice that would hold more rows runs the full query (which the cap then cuts as usual). */
  maxRows: number;
}

interface PanelState {
  /** What the state belongs to: the panel's statement and source at a spec version. */
  key: string;
  plan: Promise<IncrementalVerdict>;
  last?: { result: QueryResult; range: TickRange; stepMs: number };
  /** Incremental ticks since the last full query. */
  ticks: number;
}

/**
 * One view's panels, ticking incrementally where their statement allows it (lib/live/incremental.ts):
 * each tick re-reads only the range's cut first bucket and the buckets a late row may still change, and
 * splices them into the last result. A full query runs first, every `fullEvery` ticks, after any
 * error, when the statement, source, spec version or range length changed, when `$__interval` moved to
 * another step, and whenever the last result was cut by a limit. `deltaFor` gives the frame that carries
 * an incremental tick's change instead of the whole result.
 */
export function createIncrementalPanels(base: { run: RunPanel; plan: PlanPanel }, opts: IncrementalOptions) {
  const states = new Map<string, PanelState>();
  const deltas = new WeakMap<QueryResult, Omit<PanelDeltaFrame, "panelId" | "at">>();

  function stepOf(verdict: IncrementalVerdict, range: TickRange): number | undefined {
    if (!verdict.ok) return undefined;
    if (verdict.step.kind === "fixed") return verdict.step.stepMs;
    return intervalLiteralMs(intervalFor(range.fromMs, range.toMs, opts.maxWindowPoints));
  }

  const run: RunPanel = async (panel: Panel, dashboard: LoadedDashboard, range: TickRange, signal: AbortSignal, _window, onHeld) => {
    const key = `${dashboard.version}\u0000${panel.sourceId}\u0000${panel.sql}`;
    let st = states.get(panel.id);
    if (!st || st.key !== key) {
      st = {
        key,
        plan:
          opts.fullEvery > 0
            ? base.plan(panel, dashboard, signal).catch(() => ({ ok: false, reason: "plan failed" }))
            : Promise.resolve({ ok: false, reason: "off" }),
        ticks: 0,
      };
      states.set(panel.id, st);
    }
    const state = st;
    try {
      const verdict = await state.plan;
      const stepMs = stepOf(verdict, range);
      const last = state.last;
      const windows =
        verdict.ok &&
        stepMs !== undefined &&
        last !== undefined &&
        !last.result.truncated &&
        last.stepMs === stepMs &&
        state.ticks + 1 < opts.fullEvery &&
        range.toMs > last.range.toMs &&
        range.toMs - range.fromMs === last.range.toMs - last.range.fromMs
          ? tickWindows(range, last.range.toMs, stepMs, verdict.step.originMs, opts.lateRowsMs)
          : null;
      if (verdict.ok && windows && last && stepMs !== undefined) {
        const first = await base.run(panel, dashboard, range, signal, { fromMs: windows.first.fromMs, toMs: windows.first.toMs }, onHeld);
        const newest = await base.run(
          panel,
          dashboard,
          range,
          signal,
          { fromMs: windows.newest.fromMs, toMs: windows.newest.toMs },
          onHeld,
        );
        const spliced = splice(last.result.rows, first.rows, newest.rows, windows, verdict.bucketColumn);
        if (!first.truncated && !newest.truncated && spliced.rows.length <= opts.maxRows) {
          const result: QueryResult = {
            ...last.result,
            rows: spliced.rows,
            elapsedMs: elapsedMs(first.elapsedMs + newest.elapsedMs),
            ...(newest.stepMs !== undefined ? { stepMs: newest.stepMs } : {}),
            partialFrom: newest.partialFrom,
          };
          if (result.partialFrom === undefined) delete result.partialFrom;
          deltas.set(result, {
            rangeStart: windows.first.bucket,
            bucketColumn: verdict.bucketColumn,
            buckets: spliced.changed,
            rows: rowsOfBuckets(spliced.rows, spliced.changed, verdict.bucketColumn),
            elapsedMs: result.elapsedMs,
            ...(result.stepMs !== undefined ? { stepMs: result.stepMs } : {}),
            ...(result.partialFrom !== undefined ? { partialFrom: result.partialFrom } : {}),
          });
          state.last = { result, range, stepMs };
          state.ticks++;
          return result;
        }
      }
      const result = await base.run(panel, dashboard, range, signal, undefined, onHeld);
      state.last = stepMs === undefined ? undefined : { result, range, stepMs };
      state.ticks = 0;
      return result;
    } catch (err) {
      // After an error the next tick is a full query.
      state.last = undefined;
      throw err;
    }
  };

  return {
    run,
    /** The delta frame of an update that came from an incremental tick; undefined for a full result or an error. */
    deltaFor(update: PanelUpdate): PanelDeltaFrame | undefined {
      if (!("result" in update)) return undefined;
      const d = deltas.get(update.result);
      return d ? { panelId: update.panelId, at: update.at, ...d } : undefined;
    },
    /** Drops a panel's kept result (it left the spec). */
    forget(panelId: string): void {
      states.delete(panelId);
    },
  };
}

export type IncrementalPanels = ReturnType<typeof createIncrementalPanels>;
