import { EventEmitter } from "node:events";
import { expect, test } from "vitest";
import { coalescedSignals } from "../lib/lifecycle/coalesced-signals.ts";
import { createManualTimers } from "../lib/lifecycle/manual-timers.ts";
import { StartInterrupted, createStartInterrupt } from "./start-interrupt.ts";

function setup() {
  const proc = new EventEmitter();
  const clock = createManualTimers();
  const lines: string[] = [];
  const exits: number[] = [];
  const interrupt = createStartInterrupt({
    signals: coalescedSignals({ proc, windowMs: 1000, now: clock.now }),
    write: (l) => lines.push(l),
    exit: (c) => exits.push(c),
    what: () => "the demo",
    timers: clock.timers,
  });
  const flush = () => new Promise((r) => setImmediate(r));
  return { proc, clock, lines, exits, interrupt, flush };
}

const LINE = "start interrupted (Ctrl-C) before the demo was serving; everything it started is stopped";

test("a Ctrl-C makes the next checkpoint throw; the end stops what was started, newest first, in one line and exits 130", async () => {
  const { proc, lines, exits, interrupt } = setup();
  const stopped: string[] = [];
  interrupt.cleanups.unshift(async () => void stopped.push("postgres"));
  interrupt.cleanups.unshift(async () => void stopped.push("idp"));
  expect(() => interrupt.checkpoint()).not.toThrow();
  proc.emit("SIGINT");
  expect(() => interrupt.checkpoint()).toThrow(StartInterrupted);
  await Promise.all([interrupt.end(), interrupt.end()]);
  expect(stopped).toEqual(["idp", "postgres"]);
  expect(lines).toEqual([LINE]);
  expect(exits).toEqual([130]);
});

test("npm's forwarded copy of the Ctrl-C is not a second signal; a step that never notices is ended after the notice time", async () => {
  const { proc, clock, lines, exits, flush } = setup();
  proc.emit("SIGINT");
  proc.emit("SIGINT");
  await flush();
  expect(lines).toEqual([]);
  clock.advance(9_999);
  await flush();
  expect(lines).toEqual([]);
  clock.advance(1);
  await flush();
  expect(lines).toEqual([LINE]);
  expect(exits).toEqual([130]);
});

test("a second Ctrl-C (after the first was coalesced) ends at once; a stop that hangs is bounded", async () => {
  const { proc, clock, lines, exits, interrupt, flush } = setup();
  interrupt.cleanups.unshift(() => new Promise<void>(() => {}));
  proc.emit("SIGINT");
  clock.advance(1500);
  proc.emit("SIGINT");
  await flush();
  expect(lines).toEqual([]);
  clock.advance(10_000);
  await flush();
  expect(lines).toEqual([LINE]);
  expect(exits).toEqual([130]);
});

test("SIGTERM is named and exits 143; after release the signals belong to the drain", async () => {
  const a = setup();
  a.proc.emit("SIGTERM");
  await a.interrupt.end();
  expect(a.lines).toEqual(["start interrupted (SIGTERM) before the demo was serving; everything it started is stopped"]);
  expect(a.exits).toEqual([143]);

  const b = setup();
  b.interrupt.release();
  b.proc.emit("SIGINT");
  expect(b.interrupt.interrupted).toBeUndefined();
  expect(() => b.interrupt.checkpoint()).not.toThrow();
  expect(b.clock.pending).toBe(0);
});
