import { AppError } from "../lib/http/errors.ts";
import type { RunPanel } from "./poller.ts";

/** Used when no runner was wired: every panel reports that its source cannot be queried. */
export const unavailableRunPanel: RunPanel = async () => {
  throw new AppError("source_unavailable", "The query runner is not available on this instance.");
};
