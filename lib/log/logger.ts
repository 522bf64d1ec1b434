/** A structured JSON-lines logger. Callers pass codes and ids, never secrets or connection strings. */
export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** Writes one JSON object per line to `write` (stderr by default). */
export function createLogger(opts: { write?: (line: string) => void; now?: () => number; silent?: boolean } = {}): Logger {
  const write = opts.write ?? ((line: string) => process.stderr.write(line));
  const now = opts.now ?? Date.now;
  const emit = (level: string, msg: string, fields?: Record<string, unknown>) => {
    if (opts.silent) return;
    write(`${JSON.stringify({ time: new Date(now()).toISOString(), level, msg, ...fields })}\n`);
  };
  return {
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
  };
}
