// Reads what a Dockerfile of infra/ promises about the image it builds: its instructions, its final stage, that
// stage's ENV. The images test checks the files with it, and the fan-out bench starts the stream host's bundle with
// the runtime settings its image sets (memory tunables), so both see the Dockerfile and not a copy of it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const INFRA = fileURLToPath(new URL(".", import.meta.url));

/** One Dockerfile instruction: its keyword (upper case) and the rest of its line. */
export interface Instruction {
  op: string;
  args: string;
}

/** The instructions of `infra/<file>`, with line continuations joined and comments dropped. */
export function parseDockerfile(file: string): Instruction[] {
  const text = readFileSync(join(INFRA, file), "utf8");
  const lines = text.split("\n").filter((l) => !/^\s*#/.test(l));
  const joined = lines.join("\n").replace(/\\\n\s*/g, " ");
  return joined
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => {
      const m = /^(\S+)\s+(.*)$/.exec(l);
      if (!m) throw new Error(`infra/${file}: an instruction without arguments: ${JSON.stringify(l)}`);
      return { op: m[1].toUpperCase(), args: m[2] };
    });
}

/** The instructions of the last stage (what the image runs). */
export function finalStage(ins: Instruction[]): Instruction[] {
  const last = ins.map((i) => i.op).lastIndexOf("FROM");
  return ins.slice(last);
}

/**
 * ENV of a stage as `KEY=value` pairs (a value may itself hold `=`, as GLIBC_TUNABLES does; none holds a space);
 * `${ARG}` references resolve to the ARG's default.
 */
export function envOf(stage: Instruction[]): Record<string, string> {
  const args: Record<string, string> = {};
  const env: Record<string, string> = {};
  const pair = (text: string): [string, string] => {
    const at = text.indexOf("=");
    return at === -1 ? [text, ""] : [text.slice(0, at), text.slice(at + 1).replace(/^"|"$/g, "")];
  };
  for (const i of stage) {
    if (i.op === "ARG") {
      const [k, v] = pair(i.args);
      args[k] = v;
    }
    if (i.op === "ENV") {
      for (const p of i.args.split(/\s+/)) {
        const [k, v] = pair(p);
        env[k] = v.replace(/\$\{(\w+)\}/g, (_, name: string) => args[name] ?? "");
      }
    }
  }
  return env;
}

/** The image's ENV (its final stage's) for `infra/<file>`. */
export function imageEnv(file: string): Record<string, string> {
  return envOf(finalStage(parseDockerfile(file)));
}

/**
 * The exec form (a JSON array: no shell, so node itself is the process that receives SIGTERM) of a stage's last
 * `op` instruction (CMD, ENTRYPOINT). Throws when the stage has none or it is in shell form.
 */
export function execForm(stage: Instruction[], op: string): string[] {
  const hit = stage.filter((i) => i.op === op).pop();
  if (!hit) throw new Error(`no ${op} in the stage`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(hit.args);
  } catch {
    parsed = null;
  }
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === "string")) {
    throw new Error(`${op} is not in exec form (a JSON array of strings): ${hit.args}`);
  }
  return parsed;
}

/**
 * The options the image's CMD gives node itself, before the script (`["node", "--heap-growing-percent=30", "x.mjs"]`
 * gives `["--heap-growing-percent=30"]`): V8 flags that NODE_OPTIONS does not accept.
 */
export function imageNodeFlags(file: string): string[] {
  const [cmd, ...args] = execForm(finalStage(parseDockerfile(file)), "CMD");
  if (cmd !== "node") throw new Error(`infra/${file}: CMD runs ${cmd}, not node`);
  const script = args.findIndex((a) => !a.startsWith("-"));
  return script === -1 ? args : args.slice(0, script);
}
