import type { Server } from "node:net";

/** Where a listener tried to bind, and the variables that move it. */
export interface ListenTarget {
  port: number;
  /** The bound address; undefined means every interface. */
  host?: string;
  /** The variable that sets the port (`PORT`, `STREAM_PORT`). */
  portVariable: string;
}

/**
 * One line for a listener that could not bind: what happened on which port, and the variable that fixes it.
 * A person reads it at start-up instead of a stack trace.
 */
export function describeListenFailure(err: unknown, target: ListenTarget): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const where = target.host ? `${target.host} port ${target.port}` : `port ${target.port}`;
  switch (code) {
    case "EADDRINUSE":
      return `${where} is already in use by another process; stop it, or set ${target.portVariable} to a free port`;
    case "EACCES":
      return `not allowed to listen on ${where} (ports below 1024 need privileges); set ${target.portVariable} to a port above 1023`;
    case "EADDRNOTAVAIL":
      return `cannot listen on ${where}: no interface of this machine has that address; set LISTEN_HOST to one it has, or unset it`;
    default:
      return `cannot listen on ${where}: ${code ?? (err instanceof Error ? err.message : String(err))}`;
  }
}

/**
 * Ends the process with that one line (and exit code 1) when `server` fails to bind; `prefix` names the
 * process. Once listening, later errors are not its business. `exit` lets the caller stop what it started first.
 */
export function exitOnListenFailure(
  server: Pick<Server, "once" | "off">,
  target: ListenTarget & { prefix: string },
  exit: (line: string) => void = (line) => {
    process.stderr.write(`${line}\n`);
    process.exit(1);
  },
): void {
  const onError = (err: Error) => exit(`${target.prefix}: ${describeListenFailure(err, target)}`);
  server.once("error", onError);
  server.once("listening", () => server.off("error", onError));
}
