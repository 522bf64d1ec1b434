// The OpenAI-compatible provider (AI_PROVIDER=compat), loaded through lib/ai/sdk.ts; a named re-export keeps
// the package tree-shakeable behind the dynamic import.
export { createOpenAI } from "@ai-sdk/openai";
