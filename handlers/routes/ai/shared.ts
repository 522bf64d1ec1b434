import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import type pg from "pg";
import type { z } from "zod";
import type { ChatStore } from "../../../lib/ai/chat-store.ts";
import type { AiServices } from "../../../lib/ai/services.ts";
import type { Auth } from "../../../lib/auth/create-auth.ts";
import type { AuthVariables } from "../../../lib/auth/types.ts";
import type { Config } from "../../../lib/config/parse.ts";
import type { Guard } from "../../../lib/sql-guard/verdict.ts";
import { AppError } from "../../../lib/http/errors.ts";
import type { Metrics } from "../../../lib/metrics/metrics.ts";

/** What the AI routes need; built once per process by createApp. */
export interface AiRouteDeps {
  config: Config;
  pool: pg.Pool;
  metrics: Metrics;
  auth: Auth;
  guard: Guard;
  ai: AiServices;
  chats: ChatStore;
  now: () => number;
}

export type AiEnv = { Variables: AuthVariables };

/** Rejects oversized bodies before they are parsed (chat bodies carry panel results). */
export function limitBody(maxBytes: number) {
  return bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new AppError("bad_request", `The request body is larger than ${maxBytes} bytes.`);
    },
  });
}

/** Parses a JSON body with a zod schema at the edge; a bad body is a 400 naming each field. */
export async function jsonBody<T>(c: Context, schema: z.ZodType<T>): Promise<T> {
  let raw: unknown;
  try {
    raw = await c.req.json();
  } catch {
    throw new AppError("validation_failed", "The request body must be JSON.");
  }
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const fields = parsed.error.issues.map((i) => ({ field: i.path.map(String).join("."), message: i.message }));
  throw new AppError("validation_failed", `Invalid request: ${fields.map((f) => `${f.field || "body"} ${f.message}`).join("; ")}`, {
    fields,
  });
}
