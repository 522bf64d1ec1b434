import { EventEmitter } from "node:events";
import { expect, test } from "vitest";
import { coalescedSignals } from "./coalesced-signals.ts";

function setup() {
  const proc = new EventEmitter();
  let clock = 0;
  const signals = coalescedSignals({ proc, windowMs: 1000, now: () => clock });
  const seen: string[] = [];
  signals.on("SIGINT", () => seen.push("SIGINT"));
  signals.on("SIGTERM", () => seen.push("SIGTERM"));
  return { proc, seen, signals, advance: (ms: number) => (clock += ms) };
}

test("the terminal's SIGINT and npm's forwarded copy are one Ctrl-C", () => {
  const { proc, seen, advance } = setup();
  proc.emit("SIGINT");
  advance(3);
  proc.emit("SIGINT");
  expect(seen).toEqual(["SIGINT"]);
});

test("the same signal after the window is a second signal", () => {
  const { proc, seen, advance } = setup();
  proc.emit("SIGINT");
  advance(1000);
  proc.emit("SIGINT");
  expect(seen).toEqual(["SIGINT", "SIGINT"]);
});

test("a different signal is never dropped, and the window restarts from it", () => {
  const { proc, seen, advance } = setup();
  proc.emit("SIGTERM");
  advance(1);
  proc.emit("SIGINT");
  advance(1);
  proc.emit("SIGTERM");
  advance(1);
  proc.emit("SIGTERM");
  expect(seen).toEqual(["SIGTERM", "SIGINT", "SIGTERM"]);
});

test("a listener removed with off hears nothing more; the others still do", () => {
  const { proc, seen, signals, advance } = setup();
  const removed: string[] = [];
  const l = () => removed.push("x");
  signals.on("SIGINT", l);
  proc.emit("SIGINT");
  signals.off("SIGINT", l);
  advance(2000);
  proc.emit("SIGINT");
  expect(removed).toEqual(["x"]);
  expect(seen).toEqual(["SIGINT", "SIGINT"]);
});
