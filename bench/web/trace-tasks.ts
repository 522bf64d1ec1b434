// Chromium trace events grouped as the main thread ran them, for the browser benches' trace tools
// (bench/web-profile.ts, bench/web-first-chart.ts).

/** The fields of a complete ("X") trace event the grouping reads. */
export interface TimedEvent {
  ph: string;
  ts: number;
  dur?: number;
  pid: number;
  tid: number;
}

/**
 * One thread's complete events as top-level tasks, each with the events nested inside it: sorted by start (the
 * longer first at one instant), an event that starts before the open task ends is inside it.
 */
export function topLevelTasks<E extends TimedEvent>(events: readonly E[], thread: { pid: number; tid: number }): { task: E; inner: E[] }[] {
  const xs = events
    .filter((e) => e.pid === thread.pid && e.tid === thread.tid && e.ph === "X" && e.dur !== undefined)
    .sort((a, b) => a.ts - b.ts || b.dur! - a.dur!);
  const tasks: { task: E; inner: E[] }[] = [];
  let open: { task: E; inner: E[] } | undefined;
  for (const e of xs) {
    if (open && e.ts < open.task.ts + open.task.dur!) open.inner.push(e);
    else {
      open = { task: e, inner: [] };
      tasks.push(open);
    }
  }
  return tasks;
}
