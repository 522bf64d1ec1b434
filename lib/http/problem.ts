import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { AppError, ERROR_STATUS, type ErrorCode } from "./errors.ts";

/**
 * Recognises a config-store fault (lib/store/faults.ts `configStoreFault`): the coded 503 to answer with and
 * the fault's short code for the log, or undefined when `err` is not one. Passed in, so this envelope sits
 * below the store that raises the faults.
 */
export type ConfigStoreFaultOf = (err: unknown) => { error: AppError; cause: string } | undefined;

/** Writes an application/problem+json body (RFC 9457) with our stable `code` and the request id. */
export function problem(
  c: Context,
  code: ErrorCode,
  detail: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Response {
  const status = ERROR_STATUS[code];
  const requestId = c.get("requestId" as never) as string | undefined;
  const body = { type: `about:blank#${code}`, title: code.replaceAll("_", " "), status, code, detail, requestId, ...extra };
  return new Response(JSON.stringify(body), {
    status,
    // A Response returned from onError does not keep headers set on the context, so the id is set here too.
    headers: {
      "content-type": "application/problem+json",
      "cache-control": "no-store",
      ...(requestId ? { "x-request-id": requestId } : {}),
      ...headers,
    },
  });
}

/**
 * The one error handler: AppErrors become their problem; a config-store fault (a connection refused or
 * lost, a timeout: lib/store/faults.ts) becomes 503 `config_store_unavailable` with Retry-After, for
 * every route of both processes; anything else a generic 500 with the request id. Config-store faults
 * are logged with their code and the request id only: pg's message names the store's host and port.
 */
export function onError(log: (line: Record<string, unknown>) => void, configStoreFault: ConfigStoreFaultOf) {
  return (err: Error, c: Context): Response => {
    const storeFault = configStoreFault(err);
    if (storeFault !== undefined) {
      log({
        level: "warn",
        msg: "config store unavailable",
        requestId: c.get("requestId" as never),
        method: c.req.method,
        path: c.req.path,
        cause: storeFault.cause,
      });
      const { error } = storeFault;
      return problem(c, error.code, error.detail, error.extra, error.headers);
    }
    if (err instanceof AppError) return problem(c, err.code, err.detail, err.extra, err.headers);
    if (err instanceof HTTPException && err.status < 500) {
      const code: ErrorCode =
        err.status === 401 ? "unauthenticated" : err.status === 403 ? "forbidden" : err.status === 404 ? "not_found" : "bad_request";
      return problem(c, code, err.message || code.replaceAll("_", " "));
    }
    // Unknown errors never reach the client: the log has the rest, the body a request id to find it.
    log({
      level: "error",
      msg: "unhandled error",
      requestId: c.get("requestId" as never),
      method: c.req.method,
      path: c.req.path,
      ...unknownErrorFields(err),
    });
    return problem(c, "internal", "An internal error occurred. Quote the request id when reporting it.");
  };
}

/**
 * What the log keeps of an unexpected error. A network error (Node's, with a `syscall`) is reduced to its
 * code: its message names the peer's address and port. Anything else keeps its message and stack.
 */
function unknownErrorFields(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { error: "non-error thrown" };
  const { code, syscall } = err as { code?: unknown; syscall?: unknown };
  if (typeof syscall === "string") return { error: err.name, code: typeof code === "string" ? code : undefined, syscall };
  return { error: `${err.name}: ${err.message}`, stack: err.stack };
}
