import { EventEmitter } from "node:events";
import { describe, expect, test } from "vitest";
import { createDrainState } from "./drain-state.ts";
import { createLogger } from "../log/logger.ts";
import { createShutdown, installSignalHandlers } from "./shutdown.ts";
import { createManualTimers } from "./manual-timers.ts";

/** A host whose drain steps record their order and whose settle waits for the test. */
function fakeHost(events: string[], drain: { draining: boolean }) {
  let settle!: () => void;
  const settled = new Promise<void>((r) => {
    settle = r;
  });
  return {
    release: () => settle(),
    host: {
      beginDrain() {
        events.push(`beginDrain (flag ${drain.draining})`);
        return Promise.resolve();
      },
      async settle() {
        events.push("settle");
        await settled;
        events.push("settled");
      },
    },
  };
}

function setup(graceMs = 10_000) {
  const events: string[] = [];
  const drain = createDrainState();
  const clock = createManualTimers();
  const fake = fakeHost(events, drain);
  const exits: number[] = [];
  const shutdown = createShutdown({
    drain,
    host: fake.host,
    closeStores: async () => {
      events.push("closeStores");
    },
    graceMs,
    timers: clock.timers,
    log: createLogger({ silent: true }),
    exit: (code) => {
      events.push(`exit ${code}`);
      exits.push(code);
    },
  });
  return { events, drain, clock, fake, exits, shutdown };
}

const flush = () => new Promise<void>((r) => setImmediate(r));

describe("shutdown sequence", () => {
  test("flag first (synchronously), then the host's steps, then stores, then exit 0", async () => {
    const t = setup();
    t.shutdown.signal("SIGTERM");
    expect(t.drain.draining).toBe(true);
    expect(t.events).toEqual(["beginDrain (flag true)"]);
    await flush();
    expect(t.events).toEqual(["beginDrain (flag true)", "settle"]);
    t.fake.release();
    await t.shutdown.finished();
    expect(t.events).toEqual(["beginDrain (flag true)", "settle", "settled", "closeStores", "exit 0"]);
  });

  test("the grace bound exits 0 while work is still pending, once", async () => {
    const t = setup(1500);
    t.shutdown.signal("SIGTERM");
    await flush();
    t.clock.advance(1499);
    expect(t.exits).toEqual([]);
    t.clock.advance(1);
    expect(t.exits).toEqual([0]);
    t.fake.release();
    await t.shutdown.finished();
    expect(t.exits).toEqual([0]);
  });

  test.each([
    ["SIGTERM", 143],
    ["SIGINT", 130],
  ] as const)("a second signal (%s) while draining exits at once", async (sig, code) => {
    const t = setup();
    t.shutdown.signal("SIGTERM");
    await flush();
    t.shutdown.signal(sig);
    expect(t.exits).toEqual([code]);
    t.clock.advance(60_000);
    t.fake.release();
    await t.shutdown.finished();
    expect(t.exits).toEqual([code]);
  });
});

describe("drain begun before the signal (the task is being stopped)", () => {
  test("steps 1-4 run at once, the exit waits for SIGTERM, which is not a second signal", async () => {
    const t = setup();
    t.shutdown.begin("ecs_task_stopping");
    expect(t.drain.draining).toBe(true);
    expect(t.events).toEqual(["beginDrain (flag true)"]);
    t.fake.release();
    await t.shutdown.finished();
    expect(t.events).toEqual(["beginDrain (flag true)", "settle", "settled", "closeStores"]);
    // No grace timer runs before the signal: the stop may take longer than SHUTDOWN_GRACE_MS to arrive.
    t.clock.advance(600_000);
    expect(t.exits).toEqual([]);
    t.shutdown.signal("SIGTERM");
    expect(t.exits).toEqual([0]);
    t.shutdown.begin("again");
    expect(t.events.filter((e) => e.startsWith("beginDrain"))).toHaveLength(1);
  });

  test("SIGTERM during the early drain finishes it, bounded by the grace from the signal", async () => {
    const t = setup(1500);
    t.shutdown.begin("ecs_task_stopping");
    await flush();
    t.clock.advance(5_000);
    t.shutdown.signal("SIGTERM");
    expect(t.exits).toEqual([]);
    t.clock.advance(1499);
    expect(t.exits).toEqual([]);
    t.clock.advance(1);
    expect(t.exits).toEqual([0]);
  });

  test("SIGTERM during the early drain exits when the drain ends; a later signal is the second one", async () => {
    const t = setup();
    t.shutdown.begin("ecs_task_stopping");
    await flush();
    t.shutdown.signal("SIGTERM");
    expect(t.exits).toEqual([]);
    t.shutdown.signal("SIGINT");
    expect(t.exits).toEqual([130]);
    t.fake.release();
    await t.shutdown.finished();
    expect(t.exits).toEqual([130]);
  });

  test("drain after SIGTERM when nothing began it early: begin afterwards changes nothing", async () => {
    const t = setup();
    t.shutdown.signal("SIGTERM");
    t.shutdown.begin("ecs_task_stopping");
    t.fake.release();
    await t.shutdown.finished();
    expect(t.events.filter((e) => e.startsWith("beginDrain"))).toHaveLength(1);
    expect(t.exits).toEqual([0]);
  });
});

describe("signal handlers", () => {
  test.each([
    [{ FRAMEWORK_MANUAL_SIG_HANDLE: true, isDevelopment: false }, "drain"],
    [{ FRAMEWORK_MANUAL_SIG_HANDLE: false, isDevelopment: false }, "immediate"],
    [{ FRAMEWORK_MANUAL_SIG_HANDLE: true, isDevelopment: true }, "immediate"],
  ] as const)("%o → %s", (config, mode) => {
    const proc = new EventEmitter();
    const signals: string[] = [];
    const exits: number[] = [];
    const installed = installSignalHandlers({
      proc: proc as never,
      config,
      shutdown: { signal: (s) => signals.push(s) },
      exit: (c) => exits.push(c),
    });
    expect(installed).toBe(mode);
    proc.emit("SIGTERM");
    proc.emit("SIGINT");
    if (mode === "drain") {
      expect(signals).toEqual(["SIGTERM", "SIGINT"]);
      expect(exits).toEqual([]);
    } else {
      expect(signals).toEqual([]);
      expect(exits).toEqual([143, 130]);
    }
  });
});
