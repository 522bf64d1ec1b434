/**
 * The live page's early stream: a few lines of inline script in the page's head open the dashboard stream while the
 * bundle is still downloading and evaluating, and keep every byte received until the bundle takes the connection
 * over (web/lib/early-stream.ts). Without it the snapshot (megabytes for a large dashboard) would be requested only
 * once the bundle has run. The page policy allows this one script by its hash (lib/http/csp.ts), never inline script
 * in general; its text is a constant, and the stream's URL comes from the tag's `data-stream` attribute.
 *
 * What it leaves on `window[EARLY_STREAM_GLOBAL]`: the URL, an AbortController, the fetch's promise, and, once a 2xx
 * response has a body, its chunks as they arrive (`chunks`), `done` at its end and `failed` on a read error, with
 * `wake` called after each. It reads as the bytes come until the bundle sets `taken`; then it stops after the read in
 * progress and leaves the body's `reader` to the bundle, which reads at its own pace: a page that pauses its reading
 * for the first chart's frame is not interrupted by the rest of a snapshot of megabytes being read on its main
 * thread (each chunk is a task of its own). Left unclaimed for EARLY_STREAM_UNCLAIMED_MS, it is closed and dropped,
 * so a page whose bundle never runs does not keep a live stream's bytes. Browser-safe: text only.
 */

/** Where the script leaves the stream for the bundle. */
export const EARLY_STREAM_GLOBAL = "__pulseboardEarlyStream";

/** Not taken over by then (the bundle failed to load or start), the stream is closed and its bytes dropped. */
export const EARLY_STREAM_UNCLAIMED_MS = 30_000;

/** What the script leaves on the window. */
export interface EarlyStream {
  url: string;
  controller: AbortController;
  response: Promise<Response>;
  chunks: Uint8Array[];
  done: boolean;
  failed: boolean;
  wake: (() => void) | null;
  /** Set by the bundle when it takes the stream over: the script stops reading after the read in progress. */
  taken: boolean;
  /** The body's reader once the script has stopped reading (taken over, no read in progress): the bundle reads on. */
  reader: ReadableStreamDefaultReader<Uint8Array> | null;
}

/** The script's text (plain ES2017, no bundling): the same request the stream client makes (web/lib/sse-client.ts). */
export const EARLY_STREAM_SCRIPT = `(function(){var t=document.currentScript,u=t&&t.getAttribute("data-stream");if(!u||typeof AbortController!=="function"||typeof ReadableStream!=="function")return;var s={url:u,controller:new AbortController(),chunks:[],done:false,failed:false,wake:null,taken:false,reader:null};var poke=function(){var w=s.wake;s.wake=null;if(w)w()};s.response=fetch(u,{headers:{accept:"text/event-stream"},credentials:"same-origin",cache:"no-store",signal:s.controller.signal}).then(function(r){if(r.ok&&r.body){var k=r.body.getReader();var pump=function(){if(s.taken){s.reader=k;poke();return}k.read().then(function(x){if(x.done)s.done=true;else s.chunks.push(x.value);if(!x.done)pump();poke()},function(){s.failed=true;poke()})};pump()}return r});s.response.catch(function(){});window.${EARLY_STREAM_GLOBAL}=s;setTimeout(function(){if(window.${EARLY_STREAM_GLOBAL}===s){delete window.${EARLY_STREAM_GLOBAL};s.controller.abort();s.chunks=[]}},${EARLY_STREAM_UNCLAIMED_MS})})();`;
