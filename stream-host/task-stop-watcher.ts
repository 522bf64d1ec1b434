import type { Timers } from "../lib/lifecycle/timers.ts";
import type { Logger } from "../lib/log/logger.ts";

/**
 * Watches the ECS task metadata endpoint (`${ECS_CONTAINER_METADATA_URI_V4}/task`) for the moment the task
 * is being stopped (`DesiredStatus: "STOPPED"`). ECS deregisters a stopping task from its target group and
 * sends SIGTERM only after the deregistration delay, when the load balancer has already cut every open
 * connection; starting the drain here is what lets every SSE stream get its terminal frame. See docs/infra.md.
 */
export function createTaskStopWatcher(opts: {
  /** ECS_CONTAINER_METADATA_URI_V4 as the agent set it. */
  metadataUri: string;
  intervalMs: number;
  /** Called once, when the task's desired status is STOPPED. */
  onStopping(): void;
  fetch?: typeof globalThis.fetch;
  timers: Timers;
  log: Logger;
  /** How long one metadata request may take (default: the poll interval). */
  requestTimeoutMs?: number;
}) {
  const fetchFn = opts.fetch ?? globalThis.fetch;
  const url = `${opts.metadataUri.replace(/\/+$/, "")}/task`;
  const requestTimeoutMs = opts.requestTimeoutMs ?? Math.max(opts.intervalMs, 1000);
  let timer: unknown = null;
  let stopped = false;
  let polling = false;
  let failing = false;

  async function desiredStatus(): Promise<string | null> {
    const res = await fetchFn(url, { signal: AbortSignal.timeout(requestTimeoutMs) });
    if (!res.ok) {
      await res.body?.cancel().catch(() => {});
      throw Object.assign(new Error("metadata request failed"), { code: `http_${res.status}` });
    }
    const body = (await res.json()) as { DesiredStatus?: unknown };
    return typeof body?.DesiredStatus === "string" ? body.DesiredStatus : null;
  }

  async function poll(): Promise<void> {
    if (stopped || polling) return;
    polling = true;
    try {
      const status = await desiredStatus();
      if (failing) opts.log.info("task metadata answers again");
      failing = false;
      if (status === "STOPPED" && !stopped) {
        stop();
        opts.log.info("task is being stopped", { desiredStatus: status });
        opts.onStopping();
      }
    } catch (err) {
      // Logged once per outage: the endpoint is local to the task, so a failure is rare and says little;
      // SIGTERM still drains.
      if (!failing) {
        const code = (err as { code?: unknown; name?: unknown })?.code ?? (err as { name?: unknown })?.name;
        opts.log.warn("task metadata unavailable", { code: typeof code === "string" ? code : "error" });
      }
      failing = true;
    } finally {
      polling = false;
    }
  }

  function stop(): void {
    stopped = true;
    if (timer !== null) opts.timers.clearInterval(timer);
    timer = null;
  }

  return {
    /** Polls now and every `intervalMs` until the task is stopping or `stop` is called. */
    start(): void {
      if (stopped || timer !== null) return;
      timer = opts.timers.setInterval(() => void poll(), opts.intervalMs);
      void poll();
    },
    /** One poll (tests drive it with their own clock). */
    poll,
    stop,
  };
}

export type TaskStopWatcher = ReturnType<typeof createTaskStopWatcher>;
