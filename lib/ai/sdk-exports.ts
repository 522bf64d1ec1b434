// What the service uses of the AI SDK, loaded through lib/ai/sdk.ts. Named re-exports rather than a dynamic
// import of "ai" itself, so the bundler still drops the SDK's unused parts (a namespace import keeps them all).
export { APICallError, NoObjectGeneratedError, Output, RetryError, createGateway, generateText, streamText } from "ai";
