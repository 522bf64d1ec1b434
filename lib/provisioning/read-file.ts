import { open } from "node:fs/promises";
import { AppError } from "../http/errors.ts";

/**
 * What one provisioning run may still read: the file and every specFile it names share PROVISION_FILE_MAX_BYTES, so
 * neither one large file nor many small ones build a tree past it.
 */
export interface ReadBudget {
  /** PROVISION_FILE_MAX_BYTES, for the messages. */
  readonly max: number;
  /** Bytes left for the files still to read. */
  remaining: number;
  /** Whether a file was already read against this budget (the message then speaks of the files together). */
  used: boolean;
}

export function readBudget(max: number): ReadBudget {
  return { max, remaining: max, used: false };
}

const CHUNK_BYTES = 64 * 1024;

/** Where byte `offset` of `chunks` (read in order) sits: its 1-based line, and its 1-based byte column in that line. */
function positionOf(chunks: readonly Buffer[], offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  let at = 0;
  for (const chunk of chunks) {
    const end = Math.min(chunk.length, offset - at);
    for (let i = chunk.indexOf(0x0a); i !== -1 && i < end; i = chunk.indexOf(0x0a, i + 1)) {
      line++;
      lineStart = at + i + 1;
    }
    at += chunk.length;
    if (at >= offset) break;
  }
  return { line, column: offset - lineStart + 1 };
}

function tooLarge(what: string, budget: ReadBudget): AppError {
  const together = budget.used ? "; the provisioning file and its specFiles share that limit" : "";
  return new AppError(
    "validation_failed",
    `${what}: larger than PROVISION_FILE_MAX_BYTES (${budget.max} bytes)${together}. Split the workspaces over several files, or raise PROVISION_FILE_MAX_BYTES.`,
    { limit: "PROVISION_FILE_MAX_BYTES", maxBytes: budget.max },
  );
}

/**
 * Reads a provisioning file as UTF-8 text, never more than the budget's remaining bytes (plus one, to know it is over):
 * a file whose size is already over is refused before any read, and one that grows while read (or is not a regular
 * file) stops at the limit. A NUL byte is refused as such, by its line, column and byte offset, and so is text that is
 * not UTF-8. `what` names the file in every message.
 */
export async function readBoundedText(path: string, what: string, budget: ReadBudget): Promise<string> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, "r");
  } catch (err) {
    throw unreadable(what, err);
  }
  try {
    const stat = await handle.stat();
    if (stat.isDirectory()) throw new AppError("validation_failed", `${what}: is a directory, not a file`);
    if (stat.isFile() && stat.size > budget.remaining) throw tooLarge(what, budget);
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const want = Math.min(CHUNK_BYTES, budget.remaining + 1 - total);
      if (want <= 0) throw tooLarge(what, budget);
      const buffer = Buffer.allocUnsafe(want);
      let bytesRead: number;
      try {
        ({ bytesRead } = await handle.read(buffer, 0, want, null));
      } catch (err) {
        throw unreadable(what, err);
      }
      if (bytesRead === 0) break;
      const chunk = buffer.subarray(0, bytesRead);
      const nul = chunk.indexOf(0);
      chunks.push(chunk);
      if (nul !== -1) {
        const offset = total + nul;
        const { line, column } = positionOf(chunks, offset);
        throw new AppError(
          "validation_failed",
          `${what}: contains a NUL byte at line ${line}, column ${column} (byte ${offset}); a provisioning file is UTF-8 text without NUL.`,
          { line, column, byte: offset },
        );
      }
      total += bytesRead;
      if (total > budget.remaining) throw tooLarge(what, budget);
    }
    budget.remaining -= total;
    budget.used = true;
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks, total));
    } catch {
      throw new AppError("validation_failed", `${what}: is not valid UTF-8 text`);
    }
  } finally {
    await handle.close();
  }
}

function unreadable(what: string, err: unknown): AppError {
  const code = (err as NodeJS.ErrnoException).code;
  return new AppError(
    "validation_failed",
    `${what}: ${code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : code === "EISDIR" ? "is a directory, not a file" : (code ?? "cannot be read")}`,
  );
}
