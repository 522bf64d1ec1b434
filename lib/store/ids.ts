import { randomBytes } from "node:crypto";

/** An opaque random id with a readable prefix (`db_…`, `src_…`, `ws_…`). */
export function newId(prefix: "ws" | "db" | "src" | "req"): string {
  return `${prefix}_${randomBytes(12).toString("base64url")}`;
}
