// Entry point of the stream host (`npm run start:stream-host`, the container's command): pollers,
// SSE streams, /api/metrics and the probes on STREAM_PORT, with the drain on SIGTERM (docs/stream-host.md).
import { startStreamHost } from "./server.ts";

await startStreamHost();
