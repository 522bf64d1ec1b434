import { mergeResult, mergeDelta } from "../web/lib/panel-window.ts";
import { RollingWindow } from "../web/lib/rolling-window.ts";
import { applyPanelDelta } from "../lib/live/frames.ts";
const t0 = Date.UTC(2026,0,1), STEP=5000;
const rows = (tick:number) => { const r:any[] = []; for (let k=0;k<720;k++) for (let s=0;s<4;s++) r.push([t0+(tick+k)*STEP, `host-${s}`, Math.random()*100]); return r; };
const cols = [{name:"time",type:"timestamptz"},{name:"host",type:"text"},{name:"value",type:"float8"}];
const w = new RollingWindow(720);
let res:any = { columns: cols, rows: rows(0), stepMs: STEP };
mergeResult(w, res, [t0, t0+719*STEP]);
for (const N of [1,2]) {
let tm=0, td=0;
for (let t=1;t<=2000;t++) {
  const a = performance.now();
  const delta = { bucketColumn: 0, buckets: [t0+(t+719)*STEP], rangeStart: t0+t*STEP, rows: [0,1,2,3].map(s=>[t0+(t+719)*STEP, `host-${s}`, 1]), elapsedMs: 1, stepMs: STEP };
  res = applyPanelDelta(res, delta as any);
  const b = performance.now();
  mergeDelta(w, res, delta as any, [t0+t*STEP, t0+(t+719)*STEP]);
  const c = performance.now();
  td += b-a; tm += c-b;
}
console.log("per panel-tick: applyPanelDelta", (td/2000).toFixed(3), "ms, mergeResult", (tm/2000).toFixed(3), "ms");
}
