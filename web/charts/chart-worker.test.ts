import { expect, test } from "vitest";
import type { ChartWorkerBatch, FromChartWorker, PlotDraw } from "./chart-worker-messages.ts";
import { ChartWorker } from "./chart-worker.ts";
import type { ColumnsDelta } from "./columns-delta.ts";

/** A worker that records what it is sent, and answers as the chart worker would when told to. */
function recordingWorker() {
  const sent: { batch: ChartWorkerBatch; transfer: unknown[] }[] = [];
  const worker = {
    onmessage: null as ((e: MessageEvent<FromChartWorker>) => void) | null,
    onerror: null as ((e: { preventDefault(): void }) => void) | null,
    onmessageerror: null as (() => void) | null,
    terminated: false,
    postMessage(batch: ChartWorkerBatch, transfer: unknown[]) {
      sent.push({ batch, transfer });
    },
    terminate() {
      this.terminated = true;
    },
  };
  const reply = (m: FromChartWorker) => worker.onmessage!({ data: m } as MessageEvent<FromChartWorker>);
  const fail = () => worker.onerror!({ preventDefault() {} });
  return { worker: worker as unknown as Worker, raw: worker, sent, reply, fail };
}

const canvas = () => ({ transferControlToOffscreen: () => ({ offscreen: true }) }) as unknown as HTMLCanvasElement;
const draw = (id: number, lo: number): PlotDraw => ({
  id,
  width: 100,
  height: 50,
  count: 2,
  length: 3,
  map: { x0: 0, kx: 1, y0: 0, ky: 1 },
  box: { left: 0, top: 0, right: 100, bottom: 50 },
  lineWidth: 1,
  lo,
  hi: 2,
  series: [{ column: 1, color: "#000", alpha: 1 }],
  partial: [],
  axes: [],
  thresholds: [],
});
const delta = (cut: number): ColumnsDelta => ({ count: 2, length: 3, cut, from: 2, cells: new Float64Array(2) });
const tick = () => new Promise((r) => setTimeout(r, 0));

test("not available until the worker says it has loaded", () => {
  const { worker, reply } = recordingWorker();
  const cw = new ChartWorker(worker);
  expect(cw.available).toBe(false);
  reply({ type: "ready" });
  expect(cw.available).toBe(true);
});

test("a frame's draws go in one batch, with the canvases handed over and transferred", async () => {
  const { worker, sent } = recordingWorker();
  const cw = new ChartWorker(worker);
  const a = cw.adoptCanvas(canvas());
  const b = cw.adoptCanvas(canvas());
  cw.drawPlot(draw(a, 0), delta(0));
  cw.drawPlot(draw(b, 0), delta(0));
  cw.drawFigures({ id: b, width: 10, height: 10, ratio: 1, font: "12px sans-serif", figures: [] });
  await tick();
  expect(sent).toHaveLength(1);
  const { batch, transfer } = sent[0]!;
  expect(batch.adopt.map((x) => x.id)).toEqual([a, b]);
  expect(transfer).toHaveLength(2);
  expect(batch.plots.map((l) => l.id)).toEqual([a, b]);
  expect(batch.figures.map((f) => f.id)).toEqual([b]);
});

test("one batch in flight: later draws wait, the latest of a canvas replaces the one before, every delta is kept in order", async () => {
  const { worker, sent, reply } = recordingWorker();
  const cw = new ChartWorker(worker);
  const a = cw.adoptCanvas(canvas());
  cw.drawPlot(draw(a, 0), delta(0));
  await tick();
  expect(sent).toHaveLength(1);
  cw.drawPlot(draw(a, 1), delta(1));
  cw.drawPlot(draw(a, 2), null);
  cw.drawPlot(draw(a, 3), delta(2));
  await tick();
  // Still the first in flight.
  expect(sent).toHaveLength(1);
  let drawn = false;
  void cw.whenDrawn().then(() => (drawn = true));
  reply({ type: "drawn", busyMs: 1, endedAt: performance.timeOrigin + performance.now() });
  await tick();
  expect(sent).toHaveLength(2);
  const batch = sent[1]!.batch;
  expect(batch.plots.map((l) => l.lo)).toEqual([3]);
  expect(batch.columns.map((c) => c.delta.cut)).toEqual([1, 2]);
  expect(drawn).toBe(false);
  reply({ type: "drawn", busyMs: 1, endedAt: performance.timeOrigin + performance.now() });
  await tick();
  expect(drawn).toBe(true);
  expect(sent).toHaveLength(2);
});

test("a released canvas's waiting draws are dropped and the worker is told to let it go", async () => {
  const { worker, sent, reply } = recordingWorker();
  const cw = new ChartWorker(worker);
  const a = cw.adoptCanvas(canvas());
  const b = cw.adoptCanvas(canvas());
  cw.drawPlot(draw(a, 0), delta(0));
  await tick();
  cw.drawPlot(draw(a, 1), delta(1));
  cw.drawPlot(draw(b, 1), delta(1));
  cw.release(a);
  reply({ type: "drawn", busyMs: 1, endedAt: performance.timeOrigin + performance.now() });
  await tick();
  const batch = sent[1]!.batch;
  expect(batch.drop).toEqual([a]);
  expect(batch.plots.map((l) => l.id)).toEqual([b]);
  expect(batch.columns.map((c) => c.id)).toEqual([b]);
});

test("a worker that fails after loading is given up: unavailable, every wait ends, nothing more is sent", async () => {
  const { worker, raw, sent, reply, fail } = recordingWorker();
  const cw = new ChartWorker(worker);
  reply({ type: "ready" });
  const a = cw.adoptCanvas(canvas());
  cw.drawPlot(draw(a, 0), delta(0));
  await tick();
  expect(sent).toHaveLength(1);
  const waiting = cw.whenDrawn();
  fail();
  await waiting;
  expect(cw.available).toBe(false);
  expect(raw.terminated).toBe(true);
  cw.drawPlot(draw(a, 1), delta(1));
  cw.release(a);
  await tick();
  expect(sent).toHaveLength(1);
  await cw.whenDrawn();
});

test("a worker that fails to load leaves the page drawing: never available, the error is handled", () => {
  const { worker } = recordingWorker();
  const cw = new ChartWorker(worker);
  let prevented = false;
  (worker as unknown as { onerror(e: { preventDefault(): void }): void }).onerror({ preventDefault: () => (prevented = true) });
  expect(prevented).toBe(true);
  expect(cw.available).toBe(false);
});

test("whenPlotDrawn waits for the answer to the batch carrying the canvas' last draw, not for the worker to go idle", async () => {
  const { worker, sent, reply } = recordingWorker();
  const cw = new ChartWorker(worker);
  const a = cw.adoptCanvas(canvas());
  const b = cw.adoptCanvas(canvas());
  const answer = async () => {
    reply({ type: "drawn", busyMs: 1, endedAt: performance.timeOrigin + performance.now() });
    await tick();
  };
  // The canvases handed over (the first batch), then nothing waiting for a: at once.
  await tick();
  await answer();
  let early = false;
  await cw.whenPlotDrawn(a).then(() => (early = true));
  expect(early).toBe(true);
  cw.drawPlot(draw(b, 0), delta(0));
  await tick();
  // b's draw is in flight; a's waits behind it.
  cw.drawPlot(draw(a, 0), delta(0));
  const order: string[] = [];
  void cw.whenPlotDrawn(a).then(() => order.push("a"));
  void cw.whenPlotDrawn(b).then(() => order.push("b in flight"));
  await tick();
  expect(order).toEqual([]);
  await answer();
  // b's batch answered; a's batch is now in flight, and b draws again behind it.
  expect(order).toEqual(["b in flight"]);
  expect(sent[2]!.batch.plots.map((p) => p.id)).toEqual([a]);
  cw.drawPlot(draw(b, 1), null);
  void cw.whenPlotDrawn(b).then(() => order.push("b again"));
  await answer();
  expect(order).toEqual(["b in flight", "a"]);
  // The worker is still busy (b's second draw in flight), yet a's wait is over.
  expect(sent).toHaveLength(4);
  await answer();
  expect(order).toEqual(["b in flight", "a", "b again"]);
});

test("whenPlotDrawn ends when the canvas is released or the worker fails; onLost is called once on a failure", async () => {
  const { worker, reply, fail } = recordingWorker();
  const cw = new ChartWorker(worker);
  reply({ type: "ready" });
  const a = cw.adoptCanvas(canvas());
  const b = cw.adoptCanvas(canvas());
  cw.drawPlot(draw(a, 0), delta(0));
  await tick();
  cw.drawPlot(draw(a, 1), null);
  cw.drawPlot(draw(b, 0), delta(0));
  const ended: string[] = [];
  void cw.whenPlotDrawn(a).then(() => ended.push("a"));
  void cw.whenPlotDrawn(b).then(() => ended.push("b"));
  cw.release(b);
  await tick();
  expect(ended).toEqual(["b"]);
  let lost = 0;
  cw.onLost(() => lost++);
  const stopped = cw.onLost(() => lost++);
  stopped();
  fail();
  await tick();
  expect(ended).toEqual(["b", "a"]);
  expect(lost).toBe(1);
});
