/**
 * Readiness reasons are a dependency error code or an unset variable name, never a message:
 * messages carry hostnames, users and connection strings.
 */
export function reasonFromError(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && /^[A-Za-z0-9_]{1,40}$/.test(code)) return code;
  if (err instanceof TimeoutError) return "TIMEOUT";
  const cause = (err as { cause?: unknown } | null)?.cause;
  if (cause && cause !== err) return reasonFromError(cause);
  const message = err instanceof Error ? err.message : "";
  // node-postgres reports its own connect timeout without a code.
  if (/timeout/i.test(message)) return "TIMEOUT";
  return "error";
}

export class TimeoutError extends Error {
  readonly code = "TIMEOUT";
  constructor() {
    super("timed out");
  }
}

/** Resolves with `work` or rejects with a TimeoutError after `ms`, whichever comes first. */
export async function withTimeout<T>(work: (signal: AbortSignal) => Promise<T>, ms: number): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new TimeoutError());
    }, ms);
  });
  try {
    return await Promise.race([work(controller.signal), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
