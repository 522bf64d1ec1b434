/** A structured JSON-lines logger. Callers pass codes and ids, never secrets or connection strings. */
export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** LOG_LEVEL: the least severe line written; `silent` writes none. */
export type LogLevel = "info" | "warn" | "error" | "silent";
const RANK = { info: 0, warn: 1, error: 2, silent: 3 } as const;

/** Writes one JSON object per line to `write` (stderr by default), from `level` (default info) up. */
export function createLogger(
  opts: { write?: (line: string) => void; now?: () => number; silent?: boolean; level?: LogLevel } = {},
): Logger {
  const write = opts.write ?? ((line: string) => process.stderr.write(line));
  const now = opts.now ?? Date.now;
  const least = RANK[opts.silent ? "silent" : (opts.level ?? "info")];
  const emit = (level: "info" | "warn" | "error", msg: string, fields?: Record<string, unknown>) => {
    if (RANK[level] < least) return;
    write(`${JSON.stringify({ time: new Date(now()).toISOString(), level, msg, ...fields })}\n`);
  };
  return {
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
  };
}
