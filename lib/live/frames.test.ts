import fc from "fast-check";
import { describe, expect, test } from "vitest";
import {
  applyPanelDelta,
  applyPanelDeltaInPlace,
  type Cell,
  type PanelDeltaFrame,
  type PanelUpdate,
  type QueryResult,
  STREAM_EVENTS,
  type SnapshotFrame,
  decodeFrame,
  elapsedMs,
  readSnapshotStart,
  rowsInBucketOrder,
  splitSnapshot,
  streamUrl,
  viewParamsOf,
} from "./frames.ts";

describe("elapsedMs", () => {
  test("a duration is carried to a tenth of a millisecond, within 0.05 ms of the reading", () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1e7, noNaN: true }), (ms) => {
        const carried = elapsedMs(ms);
        expect(Math.abs(carried - ms)).toBeLessThanOrEqual(0.05 + 1e-9);
        expect(JSON.stringify(carried)).toMatch(/^\d+(\.\d)?$/);
      }),
    );
    expect(elapsedMs(13.013929000000644)).toBe(13);
    expect(elapsedMs(0.30000000000000004)).toBe(0.3);
  });
});

describe("decodeFrame", () => {
  test.each([
    ["snapshot", { dashboard: { id: "d" }, view: { from: "now-1h" }, panels: [] }],
    ["panel", { panelId: "a", at: 1, result: { columns: [], rows: [] } }],
    ["panel", { panelId: "a", at: 1, error: { code: "keyword", message: "no" } }],
    ["dashboard", { id: "d", deleted: true }],
    ["view", { from: "now-1h", to: "2026-11-27T12:00:00Z", refreshMs: 5000, vars: {}, live: false, saved: false }],
    ["session_expired", { expiresAt: 5, reason: "revoked" }],
    ["draining", { retryMs: 2000 }],
  ])("reads %s", (event, data) => {
    expect(decodeFrame(event, JSON.stringify(data))).toEqual({ event, data });
  });

  test.each([
    ["unknown", "{}"],
    ["panel", "not json"],
    ["panel", "[]"],
    ["panel", JSON.stringify({ panelId: "a", at: 1 })],
    ["snapshot", JSON.stringify({ dashboard: {}, panels: [] })],
    ["draining", JSON.stringify({ retryMs: "2000" })],
    ["view", JSON.stringify({ from: "now-1h", to: "now", live: "false" })],
    ["session_expired", "null"],
  ])("refuses %s %s", (event, data) => {
    expect(decodeFrame(event, data)).toBeNull();
  });

  test("never throws on any text", () => {
    fc.assert(
      fc.property(fc.constantFrom(...STREAM_EVENTS, "x"), fc.string(), (event, data) => {
        decodeFrame(event, data);
      }),
    );
  });
});

describe("view parameters", () => {
  test("the stream URL carries from, to, refresh and repeated var-*", () => {
    const url = streamUrl("d_1", { from: "now-6h", to: "now", refresh: "30s", vars: { service: ["checkout", "search"] } });
    expect(url).toBe("/api/dashboards/d_1/stream?from=now-6h&to=now&refresh=30s&var-service=checkout&var-service=search");
    expect(streamUrl("d_1")).toBe("/api/dashboards/d_1/stream");
  });

  test("names such as __proto__ and constructor stay plain keys", () => {
    const back = viewParamsOf(new URLSearchParams("var-__proto__=a&var-constructor=b&var-constructor=c"));
    expect(Object.keys(back.vars ?? {})).toEqual(["__proto__", "constructor"]);
    expect(back.vars?.constructor).toEqual(["b", "c"]);
  });

  test("a page's query string round-trips, other parameters are left out", () => {
    fc.assert(
      fc.property(
        fc.record(
          {
            from: fc.string(),
            to: fc.string(),
            refresh: fc.string(),
            vars: fc.dictionary(fc.stringMatching(/^[a-z_][a-z0-9_]{0,8}$/), fc.array(fc.string(), { minLength: 1, maxLength: 3 })),
          },
          { requiredKeys: [] },
        ),
        (view) => {
          const url = streamUrl("d", view);
          const search = new URLSearchParams(`${url.split("?")[1] ?? ""}&tz=UTC&viewPanel=a`);
          const back = viewParamsOf(search);
          const expected = { ...view };
          if (expected.vars && Object.keys(expected.vars).length === 0) delete expected.vars;
          expect(back).toEqual(expected);
        },
      ),
    );
  });
});

describe("splitSnapshot: a snapshot's panels cut apart, parsed one at a time", () => {
  const dashboard = {
    id: "d",
    version: 3,
    title: "T",
    refreshIntervalMs: 5000,
    time: { from: "now-1h", to: "now" },
    panels: [{ id: "a", title: "A", type: "timeseries" }],
  };
  const view = { from: "now-1h", to: "now", refreshMs: 5000, vars: {}, live: true, saved: true };
  const result = (rows: Cell[][]) => ({
    columns: [
      { name: "time", type: "timestamptz" },
      { name: "v", type: "json" },
    ],
    rows,
    truncated: false,
    elapsedMs: 1,
  });
  /** As the stream host writes it: JSON of { dashboard, view, panels }, each update { panelId, at, result | error }. */
  const wire = (panels: PanelUpdate[]) => JSON.stringify({ dashboard, view, panels } satisfies SnapshotFrame);

  test("each panel's update, and the head without panels", () => {
    const panels: PanelUpdate[] = [
      { panelId: "a", at: 1, result: result([[1, "x"]]) },
      { panelId: "b\u00e9", at: 2, error: { code: "query_timeout", message: "slow" } },
      { panelId: "c", at: 3, result: result([[2, '},{"panelId":"z"']]) },
    ];
    const split = splitSnapshot(wire(panels))!;
    expect(split.head).toEqual({ dashboard, view });
    expect(split.ids).toEqual(["a", "b\u00e9", "c"]);
    expect([0, 1, 2].map((i) => split.panel(i))).toEqual(panels);
    expect(split.panel(3)).toBeNull();
  });

  test("a JSON cell keyed panelId cuts an update apart: a piece fails, and the whole parse answers", () => {
    const hostile: Cell = [{ x: 1 }, { panelId: "b", at: 9, result: { columns: [], rows: [] } }];
    const panels: PanelUpdate[] = [
      { panelId: "a", at: 1, result: result([[1, hostile]]) },
      { panelId: "b", at: 2, result: result([[2, 3]]) },
    ];
    const split = splitSnapshot(wire(panels))!;
    expect(split.ids.map((_, i) => split.panel(i)).some((u) => u === null)).toBe(true);
    expect(split.whole()).toEqual(panels);
  });

  test.each([
    ["no panels", JSON.stringify({ dashboard, view, panels: [] })],
    ["not a snapshot", JSON.stringify({ panelId: "a", at: 1, result: {} })],
    ["not JSON", '{"dashboard":{,"view":{},"panels":[{"panelId":"a"}]}'],
    [
      "the key in the summary's options",
      JSON.stringify({
        dashboard: { ...dashboard, panels: [{ id: "a", options: { panels: [{ panelId: "x" }] } }] },
        view,
        panels: [{ panelId: "a", at: 1, result: result([]) }],
      }),
    ],
    ["an escaped id", JSON.stringify({ dashboard, view, panels: [{ panelId: 'a"b', at: 1, result: result([]) }] })],
  ])("%s: null, decoded whole instead", (_, data) => {
    expect(splitSnapshot(data)).toBeNull();
  });

  test("any snapshot: the pieces that all parse are the updates, in order; otherwise the whole parse is", () => {
    const cell: fc.Arbitrary<Cell> = fc.oneof(
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.string(),
      fc.constantFrom('},{"panelId":"a","at":1,"result":{}}', "]}", '"panels":[{"panelId":'),
      fc.constant(null),
      fc.record({ panelId: fc.constantFrom("a", "b"), at: fc.nat(), result: fc.constant({}) }),
      fc.array(fc.record({ panelId: fc.constantFrom("a", "b"), at: fc.nat(), error: fc.constant({}) }), { maxLength: 2 }),
    );
    const update: fc.Arbitrary<PanelUpdate> = fc.record({
      panelId: fc.string({ minLength: 1, maxLength: 4 }),
      at: fc.nat(),
      result: fc.array(fc.tuple(fc.nat(), cell), { maxLength: 4 }).map((rows) => result(rows)),
    });
    fc.assert(
      fc.property(fc.uniqueArray(update, { selector: (u) => u.panelId, maxLength: 5 }), (panels) => {
        const split = splitSnapshot(wire(panels));
        if (split === null) return;
        expect(split.head).toEqual({ dashboard, view });
        // What the wire carries: JSON has no -0, so a -0 cell arrives as 0.
        const sent = JSON.parse(JSON.stringify(panels)) as PanelUpdate[];
        const pieces = split.ids.map((_, i) => split.panel(i));
        if (pieces.every((u) => u !== null)) expect(pieces).toEqual(sent);
        else expect(split.whole()).toEqual(sent);
      }),
      { numRuns: 300 },
    );
  });

  test("the start of a snapshot still arriving: the head once the list has begun, each update once a cut follows it", () => {
    const panels: PanelUpdate[] = [
      { panelId: "a", at: 1, result: result([[1, "x"]]) },
      { panelId: "b", at: 2, result: result([[2, "y"]]) },
      { panelId: "c", at: 3, result: result([[3, "z"]]) },
    ];
    const data = wire(panels);
    const listAt = data.indexOf('"panels":[');
    expect(readSnapshotStart(data.slice(0, listAt + 5))).toBeNull();
    const bAt = data.indexOf('{"panelId":"b"');
    // The first update ends, but its cut has not fully arrived: nothing is complete yet.
    expect(readSnapshotStart(data.slice(0, bAt - 1))?.ids).toEqual([]);
    const start = readSnapshotStart(data.slice(0, bAt + '{"panelId":'.length))!;
    expect(start.head).toEqual({ dashboard, view });
    expect(start.ids).toEqual(["a"]);
    expect(start.panel(0)).toEqual(panels[0]);
    expect(start.panel(1)).toBeNull();
    // The whole event: the last update has no cut after it, it is splitSnapshot's.
    expect(readSnapshotStart(data)?.ids).toEqual(["a", "b"]);
  });

  test("any start of any snapshot: an update read from it is that panel's, never another's or a part of one", () => {
    const cell: fc.Arbitrary<Cell> = fc.oneof(
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.string(),
      fc.constantFrom('},{"panelId":"a","at":1,"result":{}}', "]}", '"panels":[{"panelId":'),
      fc.record({ panelId: fc.constantFrom("a", "b"), at: fc.nat(), result: fc.constant({}) }),
      fc.array(fc.record({ panelId: fc.constantFrom("a", "b"), at: fc.nat(), error: fc.constant({}) }), { maxLength: 2 }),
    );
    const update: fc.Arbitrary<PanelUpdate> = fc.record({
      panelId: fc.constantFrom("a", "b", "c", "d"),
      at: fc.nat(),
      result: fc.array(fc.tuple(fc.nat(), cell), { maxLength: 4 }).map((rows) => result(rows)),
    });
    fc.assert(
      fc.property(
        fc.uniqueArray(update, { selector: (u) => u.panelId, maxLength: 4 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (panels, f) => {
          const data = wire(panels);
          const start = readSnapshotStart(data.slice(0, Math.floor(f * data.length)));
          if (start === null) return;
          expect(start.head).toEqual({ dashboard, view });
          // What the wire carries: JSON has no -0, so a -0 cell arrives as 0.
          const sent = JSON.parse(JSON.stringify(panels)) as PanelUpdate[];
          start.ids.forEach((id, i) => {
            const u = start.panel(i);
            if (u !== null) expect(u).toEqual(sent.find((p) => p.panelId === id));
          });
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("applyPanelDeltaInPlace: applyPanelDelta's result, in the held rows array", () => {
  const STEP = 10;
  type Delta = Omit<PanelDeltaFrame, "panelId" | "at">;
  /** Whether rows are in bucket order, scanned (not rowsInBucketOrder's answer kept per array). */
  const scanned = (rows: Cell[][], col: number) =>
    rows.every(
      (r, i) => typeof r[col] === "number" && Number.isFinite(r[col]) && (i === 0 || (r[col] as number) >= (rows[i - 1]![col] as number)),
    );
  const result = (rows: Cell[][]): QueryResult => ({
    columns: [
      { name: "time", type: "timestamptz" },
      { name: "host", type: "text" },
    ],
    rows,
    truncated: false,
    elapsedMs: 0,
    partialFrom: 5,
  });
  const rowAt = (col: number, bucket: Cell, host: string, v: number): Cell[] => (col === 0 ? [bucket, host, v] : [host, bucket, v]);
  /** The delta's meaning at its plainest, as applyPanelDelta did it before it kept a block: the reference. */
  const wholeCopy = (held: QueryResult, delta: Delta): QueryResult => {
    const bucket = (r: Cell[]) => r[delta.bucketColumn] as number;
    const replaced = new Set(delta.buckets);
    const rows = held.rows.filter((r) => bucket(r) >= delta.rangeStart && !replaced.has(bucket(r)));
    for (const r of delta.rows) rows.push([...r]);
    rows.sort((x, y) => bucket(x) - bucket(y));
    const next: QueryResult = { ...held, rows, elapsedMs: delta.elapsedMs };
    if (delta.stepMs !== undefined) next.stepMs = delta.stepMs;
    if (delta.partialFrom !== undefined) next.partialFrom = delta.partialFrom;
    else delete next.partialFrom;
    return next;
  };

  test("a tick that drops the oldest bucket and adds the newest reuses the array, and leaves applyPanelDelta's result", () => {
    const rows = Array.from({ length: 30 }, (_, i) => rowAt(0, Math.floor(i / 3) * STEP, `h${i % 3}`, i));
    const copy = applyPanelDelta(result(rows.map((r) => [...r])), {
      rangeStart: STEP,
      bucketColumn: 0,
      buckets: [90, 100],
      rows: [rowAt(0, 90, "h0", 1), rowAt(0, 100, "h0", 2)],
      elapsedMs: 1,
    });
    const held = result(rows);
    const next = applyPanelDeltaInPlace(held, {
      rangeStart: STEP,
      bucketColumn: 0,
      buckets: [90, 100],
      rows: [rowAt(0, 90, "h0", 1), rowAt(0, 100, "h0", 2)],
      elapsedMs: 1,
    });
    expect(next.rows).toBe(rows);
    expect(next).toEqual(copy);
    expect(next.rows.map((r) => r[0])).toEqual([
      10, 10, 10, 20, 20, 20, 30, 30, 30, 40, 40, 40, 50, 50, 50, 60, 60, 60, 70, 70, 70, 80, 80, 80, 90, 100,
    ]);
    expect(next.partialFrom).toBeUndefined();
  });

  test("rows the tick leaves out of bucket order are known to be: the order kept for the array is not trusted", () => {
    const rows = [rowAt(0, 0, "a", 0), rowAt(0, 10, "a", 1), rowAt(0, 20, "a", 2)];
    expect(rowsInBucketOrder(rows, 0)).toBe(true);
    const next = applyPanelDeltaInPlace(result(rows), {
      rangeStart: 0,
      bucketColumn: 0,
      buckets: [20],
      rows: [rowAt(0, null, "a", 3)],
      elapsedMs: 1,
    });
    expect(next.rows).toBe(rows);
    expect(scanned(next.rows, 0)).toBe(false);
    expect(rowsInBucketOrder(next.rows, 0)).toBe(false);
  });

  test("property: any sequence of deltas gives what applyPanelDelta gives, which leaves its held rows as they were and gives the whole filter-and-sort's result", () => {
    const bucketCell = fc.oneof(
      { weight: 12, arbitrary: fc.integer({ min: -2, max: 14 }).map((b) => (b * STEP) as Cell) },
      { weight: 1, arbitrary: fc.constantFrom<Cell>(null, "x", 15.5) },
    );
    const hosts = fc.constantFrom("a", "b", "c");
    const rowArb = fc.tuple(bucketCell, hosts, fc.integer());
    const delta = fc.record({
      advance: fc.integer({ min: -1, max: 3 }),
      // Buckets relative to the range start: before it (out of range), held ones, new ones.
      buckets: fc.uniqueArray(fc.integer({ min: -2, max: 14 }), { maxLength: 4 }),
      // Rows of the listed buckets (each row picks one by index), and rows of buckets the frame does not list.
      listed: fc.array(fc.tuple(fc.nat(), hosts, fc.integer()), { maxLength: 6 }),
      stray: fc.array(rowArb, { maxLength: 2 }),
      partial: fc.option(fc.integer({ min: 0, max: 14 }), { nil: undefined }),
      step: fc.boolean(),
    });
    fc.assert(
      fc.property(
        fc.constantFrom(0, 1),
        fc.array(rowArb, { maxLength: 40 }),
        fc.boolean(),
        fc.array(delta, { minLength: 1, maxLength: 12 }),
        (col, initial, sortInitial, deltas) => {
          const make = () => {
            const rows = initial.map(([b, h, v]) => rowAt(col, b, h, v));
            if (sortInitial) rows.sort((x, y) => (Number(x[col]) || 0) - (Number(y[col]) || 0));
            return rows;
          };
          let copy = result(make());
          let inPlace = result(make());
          let rangeStart = 0;
          for (const d of deltas) {
            rangeStart += d.advance * STEP;
            const buckets = d.buckets.map((b) => rangeStart + b * STEP);
            const rows = [
              ...(buckets.length > 0 ? d.listed.map(([i, h, v]) => rowAt(col, buckets[i % buckets.length]!, h, v)) : []),
              ...d.stray.map(([b, h, v]) => rowAt(col, b, h, v)),
            ];
            const frame: Delta = {
              rangeStart,
              bucketColumn: col,
              buckets,
              rows,
              elapsedMs: 1,
              ...(d.step ? { stepMs: STEP } : {}),
              ...(d.partial !== undefined ? { partialFrom: rangeStart + d.partial * STEP } : {}),
            };
            const before = structuredClone(copy.rows);
            const held = copy.rows;
            const nextCopy = applyPanelDelta(copy, frame);
            expect(held).toEqual(before);
            expect(nextCopy).toEqual(wholeCopy(copy, frame));
            const heldInPlace = inPlace.rows;
            const wasOrdered = scanned(heldInPlace, col);
            inPlace = applyPanelDeltaInPlace(inPlace, frame);
            copy = nextCopy;
            expect(inPlace).toEqual(copy);
            // Rows in bucket order are changed in place; others are copied.
            expect(inPlace.rows === heldInPlace).toBe(wasOrdered);
            // The order known of each array is its order.
            expect(rowsInBucketOrder(inPlace.rows, col)).toBe(scanned(inPlace.rows, col));
            expect(rowsInBucketOrder(copy.rows, col)).toBe(scanned(copy.rows, col));
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
