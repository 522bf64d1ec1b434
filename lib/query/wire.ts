/**
 * The runner's whole pipeline as one buffer of PostgreSQL protocol v3 messages (hand-encoded; the format
 * is the documented, stable frontend protocol). One `write` instead of pg's per-message serialization and
 * a corked writev of a dozen small buffers.
 */

/** The pipeline's fixed messages, encoded once per runner (they never change for a given timeout). */
export interface FixedMessages {
  /** Parse of the four named statements, sent first on a fresh connection. */
  parse: Buffer;
  /** Bind/Execute of BEGIN READ ONLY, SET LOCAL statement_timeout and SET LOCAL work_mem. */
  prefix: Buffer;
  /** Bind/Execute of the advisory-lock release (SESSION_RESET) and ROLLBACK, then Sync. */
  suffix: Buffer;
}

/**
 * Run after the statement, inside its transaction and in the same message, so a connection goes back to its
 * pool holding nothing from the statement it ran. What one SELECT can leave behind that its transaction's
 * ROLLBACK does not undo is session advisory locks (`pg_advisory_lock` and its kin): settings (`set_config`),
 * cursors, LISTEN and temporary objects are transactional. Any other statement (PREPARE above all, whose
 * prepared statement outlives the ROLLBACK) costs its connection instead: the portal reads the statement's
 * command tag, and only a SELECT's connection is reused (ReadOnlyPortal.reusable).
 *
 * Measured against PostgreSQL's own DISCARD ALL behind the ROLLBACK (which also drops the named statements,
 * so they were parsed again behind it): one more statement inside the open transaction costs the server less
 * than a statement that is a transaction of its own plus three Parses (docs/query-runner.md, "Session reset").
 */
export const SESSION_RESET = "SELECT pg_advisory_unlock_all()";

function message(code: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(code, 0, "latin1");
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

const cstring = (s: string) => Buffer.from(`${s}\0`, "utf8");
const int16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
};
/** Parse: statement name, text, no parameter types. */
const parseMessage = (name: string, text: string) => message("P", Buffer.concat([cstring(name), cstring(text), int16(0)]));
/** Bind of a named statement to the unnamed portal: no parameters, default (text) result format. */
const bindMessage = (name: string) => message("B", Buffer.concat([cstring(""), cstring(name), int16(0), int16(0), int16(0)]));
/** Execute of the unnamed portal, all rows. */
const executeMessage = () => message("E", Buffer.concat([cstring(""), Buffer.alloc(4)]));
const syncMessage = () => message("S", Buffer.alloc(0));

/**
 * work_mem of every statement, in kB (PostgreSQL's default): what one sort or hash may hold before it spills to
 * temp files. A role may set it for itself, so a role default of the source cannot raise it for panel queries.
 */
export const STATEMENT_WORK_MEM_KB = 4096;

/**
 * Encodes BEGIN READ ONLY, SET LOCAL statement_timeout, SET LOCAL work_mem, the advisory-lock release and
 * ROLLBACK as named statements.
 */
export function fixedMessages(timeoutMs: number, workMemKb = STATEMENT_WORK_MEM_KB): FixedMessages {
  const timeout = Math.max(1, Math.floor(timeoutMs));
  const workMem = Math.max(64, Math.floor(workMemKb));
  const names = {
    begin: "pb_ro_begin",
    timeout: `pb_ro_timeout_${timeout}`,
    workMem: `pb_ro_work_mem_${workMem}`,
    unlock: "pb_ro_unlock",
    rollback: "pb_ro_rollback",
  };
  const parse = Buffer.concat([
    parseMessage(names.begin, "BEGIN READ ONLY"),
    parseMessage(names.timeout, `SET LOCAL statement_timeout = ${timeout}`),
    parseMessage(names.workMem, `SET LOCAL work_mem = '${workMem}kB'`),
    parseMessage(names.unlock, SESSION_RESET),
    parseMessage(names.rollback, "ROLLBACK"),
  ]);
  return {
    parse,
    prefix: Buffer.concat([
      bindMessage(names.begin),
      executeMessage(),
      bindMessage(names.timeout),
      executeMessage(),
      bindMessage(names.workMem),
      executeMessage(),
    ]),
    suffix: Buffer.concat([bindMessage(names.unlock), executeMessage(), bindMessage(names.rollback), executeMessage(), syncMessage()]),
  };
}

/** Describe of the unnamed portal: 'D', length 6, 'P', "". */
const DESCRIBE_PORTAL = Buffer.from([0x44, 0, 0, 0, 6, 0x50, 0]);

/**
 * The full pipeline for one statement: [Parse of the fixed statements] · Bind/Execute BEGIN, SET ·
 * Parse (unnamed, with parameter types) · Bind (text parameters, text results) · Describe portal ·
 * Execute (row limit) · Bind/Execute the advisory-lock release · Bind/Execute ROLLBACK · Sync.
 */
export function encodePipeline(
  fixed: FixedMessages,
  parseFixed: boolean,
  text: string,
  types: readonly number[],
  values: readonly (string | null)[],
  rowLimit: number,
): Buffer {
  const textBytes = Buffer.byteLength(text);
  const valueBytes = values.map((v) => (v === null ? -1 : Buffer.byteLength(v)));
  const parseLen = 4 + 1 + textBytes + 1 + 2 + 4 * types.length;
  const bindLen = 4 + 1 + 1 + 2 + 2 + valueBytes.reduce((n, b) => n + 4 + Math.max(b, 0), 0) + 2;
  const executeLen = 4 + 1 + 4;
  const head = parseFixed ? fixed.parse.length : 0;
  const total = head + fixed.prefix.length + 1 + parseLen + 1 + bindLen + DESCRIBE_PORTAL.length + 1 + executeLen + fixed.suffix.length;
  const buf = Buffer.allocUnsafe(total);
  let o = 0;
  if (parseFixed) o += fixed.parse.copy(buf, o);
  o += fixed.prefix.copy(buf, o);
  // Parse
  buf[o++] = 0x50;
  o = buf.writeInt32BE(parseLen, o);
  buf[o++] = 0;
  o += buf.write(text, o, "utf8");
  buf[o++] = 0;
  o = buf.writeInt16BE(types.length, o);
  for (const t of types) o = buf.writeUInt32BE(t, o);
  // Bind: no parameter format codes (all text), the values, no result format codes (all text).
  buf[o++] = 0x42;
  o = buf.writeInt32BE(bindLen, o);
  buf[o++] = 0;
  buf[o++] = 0;
  o = buf.writeInt16BE(0, o);
  o = buf.writeInt16BE(values.length, o);
  values.forEach((v, i) => {
    const len = valueBytes[i] as number;
    o = buf.writeInt32BE(len, o);
    if (v !== null) o += buf.write(v, o, "utf8");
  });
  o = buf.writeInt16BE(0, o);
  o += DESCRIBE_PORTAL.copy(buf, o);
  // Execute
  buf[o++] = 0x45;
  o = buf.writeInt32BE(executeLen, o);
  buf[o++] = 0;
  o = buf.writeInt32BE(rowLimit, o);
  o += fixed.suffix.copy(buf, o);
  if (o !== total) throw new Error(`pipeline encoding is ${o} bytes, expected ${total}`);
  return buf;
}

const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);

/**
 * `new Date(ms).toISOString()` for a bind parameter, without a Date (a poller formats two per panel per
 * tick). Civil-from-days arithmetic (H. Hinnant) for years 1000..9999; other instants go through Date.
 */
export function isoTimestamp(ms: number): string {
  if (!(ms >= -30_610_224_000_000 && ms < 253_402_300_800_000) || !Number.isInteger(ms)) {
    return new Date(ms).toISOString();
  }
  const days = Math.floor(ms / 86_400_000);
  let rest = ms - days * 86_400_000;
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  const y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const mi = Math.floor(rest / 60_000);
  rest -= mi * 60_000;
  const sec = Math.floor(rest / 1000);
  const milli = rest - sec * 1000;
  const msText = milli < 10 ? `00${milli}` : milli < 100 ? `0${milli}` : `${milli}`;
  return `${y}-${pad2(m)}-${pad2(d)}T${pad2(h)}:${pad2(mi)}:${pad2(sec)}.${msText}Z`;
}
