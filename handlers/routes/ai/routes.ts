import type { ApiRouter } from "../../openapi.ts";
import { registerGenerateRoute } from "./generate.ts";
import type { AiRouteDeps } from "./shared.ts";
import { registerSourceDraftRoute } from "./source-draft.ts";

export { functionDeadline, GenerateRequestSchema, GenerateResultSchema } from "./generate.ts";
export type { AiRouteDeps } from "./shared.ts";
export { SourceDraftRequestSchema, SourceDraftResultSchema } from "./source-draft.ts";

/**
 * The model-backed routes of one-shot answers: generate a dashboard (editor) and draft a source's notes
 * (admin). Both pass the admission gate before any model call. Chat and the generation log are their own
 * resources (routes/chat/, routes/generation-log/) on the same AiRouteDeps.
 */
export function registerAiRoutes(app: ApiRouter, deps: AiRouteDeps): void {
  registerGenerateRoute(app, deps);
  registerSourceDraftRoute(app, deps);
}
