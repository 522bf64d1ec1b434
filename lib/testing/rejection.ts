import { expect } from "vitest";
import { AppError } from "../http/errors.ts";

/** Test-only: awaits `p`, which must reject with an AppError, and returns that error so its code can be checked. */
export async function rejection(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error("expected a rejection");
}
