import { EARLY_STREAM_GLOBAL, type EarlyStream } from "../../lib/live/early-stream.ts";

/** The early stream taken over: its response (the bytes already received first), and how to end it. */
export interface TakenStream {
  response: Promise<Response>;
  abort(): void;
}

/**
 * Takes over the stream the page's inline script opened (lib/live/early-stream.ts) when it was opened for `url`, once:
 * a later call, or one for another URL (the view changed before the bundle ran), gets null and the stream client
 * opens its own connection; one for another URL also ends the early one. The response's body gives the chunks the
 * script kept, then the rest as this page reads it (the script stops reading once taken over); cancelling it, or
 * `abort()`, ends the connection.
 */
export function takeEarlyStream(
  url: string,
  scope: Record<string, unknown> = globalThis as unknown as Record<string, unknown>,
): TakenStream | null {
  const s = scope[EARLY_STREAM_GLOBAL] as EarlyStream | undefined;
  if (!s) return null;
  delete scope[EARLY_STREAM_GLOBAL];
  const abort = () => s.controller.abort();
  if (s.url !== url) {
    abort();
    return null;
  }
  // The script reads no further than the read it has in progress: from here the body is read as this page reads it.
  s.taken = true;
  const response = s.response.then((res) => {
    if (!res.ok || !res.body) return res;
    const body = new ReadableStream<Uint8Array>({
      pull(ctrl) {
        return new Promise<void>((resolve) => {
          const step = () => {
            if (s.chunks.length > 0) {
              for (const chunk of s.chunks.splice(0)) ctrl.enqueue(chunk);
              resolve();
            } else if (s.failed) {
              ctrl.error(new Error("the stream failed"));
              resolve();
            } else if (s.done) {
              ctrl.close();
              resolve();
            } else if (s.reader) {
              // The script has stopped: one read of the body per pull, as the stream client asks.
              s.reader.read().then(
                (x) => {
                  if (x.done) ctrl.close();
                  else ctrl.enqueue(x.value);
                  resolve();
                },
                () => {
                  ctrl.error(new Error("the stream failed"));
                  resolve();
                },
              );
            } else s.wake = step;
          };
          step();
        });
      },
      cancel: abort,
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  });
  return { response, abort };
}
