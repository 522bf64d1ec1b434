// npm run bench -- redact: time to redact 1 MB of adversarial text of each kind (text built to make a
// backtracking pattern quadratic) beside 1 MB of plain prose, and the ratio (target <= 3x for each kind). Then a
// model answer nested 10,000 levels deep: the bound check that refuses it, and what redaction and storage do with it
// (they stop at the nesting limit) beside the same answer 8 levels deep.
import { redactDeep } from "../lib/ai/generation-log.ts";
import { modelOutputIssue, modelOutputTextIssue } from "../lib/ai/output-bounds.ts";
import { redact } from "../lib/ai/redact.ts";
import { storableJson } from "../lib/ai/storable.ts";

const SIZE = 1 << 20;
const ROUNDS = 7;

/** `unit` repeated to exactly SIZE characters. */
const fill = (unit: string) => unit.repeat(Math.ceil(SIZE / unit.length)).slice(0, SIZE);

/** Plain prose of the kind people ask a dashboard about: words, numbers, punctuation, a little SQL. */
function prose(): string {
  const words = (
    "the p95 latency of http requests by service rose after the deploy at 10:00 and errors per minute " +
    "stayed flat while queue depth grew so check panels for status 500 and the top endpoints by count " +
    "SELECT count(*) FROM http_requests WHERE ts > now() - interval '1 hour' GROUP BY service ORDER BY 1"
  ).split(" ");
  let out = "";
  for (let i = 0; out.length < SIZE; i++) out += `${words[(i * 7919) % words.length]}${i % 17 === 16 ? ". " : " "}`;
  return out.slice(0, SIZE);
}

const KINDS: [string, string][] = [
  ["repeated separators a-a-a-", fill("a-")],
  ["repeated separators a.a.a.", fill("a.")],
  ["near-miss keys, no values", fill("password:, token=; api_key:& ")],
  ["near-miss bearer token token", fill("token ")],
  ["one key run passwordpassword", fill("password")],
  ['quoted values password:"', fill('password:"')],
  ["URL run http://aaaa… (no @)", `http://${fill("x").slice(7)}`],
  ["schemes in one run http://a/", fill("http://a/")],
  ["local parts a@a@a@", fill("a@")],
  ["domain x@a.a.a. (no TLD)", `x@${fill("a.").slice(2)}`],
  ["JWT near miss eyJ-eyJ-", fill("eyJ-")],
  ["JWT anchors .eyJ.eyJ", fill(".eyJ")],
  ["one base64-ish run aB3+", fill("aB3+")],
  ["base64-ish runs of 31", fill(`${"aB3+".repeat(8).slice(0, 31)} `)],
  ["digit groups 1-2-…-8, ", fill("1-2-3-4-5-6-7-8, ")],
  ["one digit run 1-2-3-", fill("1-2-")],
];

/** Best time in ms of redact(text) over ROUNDS rounds. */
function best(texts: string[]): number[] {
  const times = texts.map(() => Number.POSITIVE_INFINITY);
  // Interleaved rounds: a load spike on the shared machine hits every kind alike, prose included.
  for (let r = 0; r < ROUNDS; r++) {
    texts.forEach((text, k) => {
      const start = performance.now();
      redact(text);
      times[k] = Math.min(times[k]!, performance.now() - start);
    });
  }
  return times;
}

export async function run(): Promise<void> {
  const texts = [prose(), ...KINDS.map(([, t]) => t)];
  for (const t of texts) redact(t); // warm-up: the JIT has seen every path
  const [proseMs, ...kindMs] = best(texts);
  const width = Math.max(...KINDS.map(([name]) => name.length));
  console.log(`input size:                     ${SIZE.toLocaleString("en-US")} characters each, best of ${ROUNDS} rounds`);
  console.log(`${"plain prose".padEnd(width)}  ${proseMs!.toFixed(1).padStart(7)} ms`);
  let worst = 0;
  KINDS.forEach(([name], k) => {
    const ratio = kindMs[k]! / proseMs!;
    worst = Math.max(worst, ratio);
    console.log(`${name.padEnd(width)}  ${kindMs[k]!.toFixed(1).padStart(7)} ms  ${ratio.toFixed(2)}x prose`);
  });
  console.log(`worst adversarial / prose:      ${worst.toFixed(2)}x (target <= 3x for each kind)`);
  deepAnswer();
}

/** A model answer `{"panels":[{"options":{"a":{"a":…}}}]}` nested `depth` levels, as JSON text. */
const deepText = (depth: number) =>
  `{"title":"t","panels":[{"id":"p","options":${'{"a":'.repeat(depth)}"password: hunter2"${"}".repeat(depth)}}]}`;

/** Best time in ms of `fn` over ROUNDS rounds. */
function bestOf(fn: () => unknown): number {
  let t = Number.POSITIVE_INFINITY;
  for (let r = 0; r < ROUNDS; r++) {
    const start = performance.now();
    fn();
    t = Math.min(t, performance.now() - start);
  }
  return t;
}

function deepAnswer(): void {
  const deep = deepText(10_000);
  const shallow = deepText(8);
  const deepValue = JSON.parse(deep) as unknown;
  const shallowValue = JSON.parse(shallow) as unknown;
  const refused = modelOutputTextIssue(deep);
  console.log(`model answer 10,000 levels deep (${deep.length.toLocaleString("en-US")} characters): ${refused ?? "accepted"}`);
  const check = bestOf(() => modelOutputIssue(deepValue));
  const checkShallow = bestOf(() => modelOutputIssue(shallowValue));
  console.log(`  bound check:            ${check.toFixed(3).padStart(8)} ms  (8 levels: ${checkShallow.toFixed(3)} ms)`);
  const store = bestOf(() => JSON.stringify(storableJson(redactDeep(deepValue, 20_000))));
  const storeShallow = bestOf(() => JSON.stringify(storableJson(redactDeep(shallowValue, 20_000))));
  console.log(
    `  redact + store:         ${store.toFixed(3).padStart(8)} ms  (8 levels: ${storeShallow.toFixed(3)} ms, ${(store / storeShallow).toFixed(2)}x)`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
