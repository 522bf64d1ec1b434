/**
 * The README's runnable examples: a fenced `sh` block right after `<!-- readme-test: NAME -->`.
 * In a block, a command is a line that is not a comment (with `\` continuations); comment lines right under a
 * command (or under its other output lines) are its documented output, `…` standing for any text, and
 * `# [exit N]` its exit status when not 0. Other comments (after a blank line, or first) explain.
 */
export interface ReadmeStep {
  command: string;
  expected: string[];
  exitCode: number;
}

/**
 * The steps a test runs: an `export` whose value holds `…` is a placeholder (a password, your database's address)
 * that the test fills from its own environment instead.
 */
export function withoutPlaceholders(steps: readonly ReadmeStep[]): ReadmeStep[] {
  return steps.filter((s) => !(/^export\s/.test(s.command) && s.command.includes("…")));
}

/** Names of the blocks marked for testing in a Markdown text, in order. */
export function markedBlocks(text: string): string[] {
  return [...text.matchAll(/<!-- readme-test: ([\w-]+) -->/g)].map((m) => m[1]!);
}

/** The steps of the block named `name`; throws when the README has no such block. */
export function readmeBlock(readme: string, name: string): ReadmeStep[] {
  const marker = `<!-- readme-test: ${name} -->`;
  const at = readme.indexOf(marker);
  if (at === -1) throw new Error(`README has no ${marker}`);
  const fence = /```sh\n([\s\S]*?)\n```/.exec(readme.slice(at + marker.length));
  if (!fence) throw new Error(`no \`\`\`sh block after ${marker}`);
  const steps: ReadmeStep[] = [];
  let current: ReadmeStep | undefined;
  let continuing = false;
  for (const line of fence[1]!.split("\n")) {
    if (continuing && current) {
      current.command += `\n${line}`;
      continuing = line.endsWith("\\");
      continue;
    }
    if (line.trim() === "") {
      current = undefined;
      continue;
    }
    if (line.startsWith("#")) {
      if (!current) continue; // an explanation
      const text = line.replace(/^# ?/, "");
      const exit = /^\[exit (\d+)\]$/.exec(text);
      if (exit) current.exitCode = Number(exit[1]);
      else current.expected.push(text);
      continue;
    }
    current = { command: line, expected: [], exitCode: 0 };
    steps.push(current);
    continuing = line.endsWith("\\");
  }
  return steps;
}

/** Whether `line` matches a documented output line (`…` matches any text, everything else literally). */
export function matchesDocumented(line: string, documented: string): boolean {
  const pattern = documented
    .split("…")
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  return new RegExp(`^${pattern}$`).test(line.trimEnd());
}

/**
 * The documented lines that `output` does not show in order (each documented line matched by a later output
 * line than the one before); empty when all are there.
 */
export function missingOutput(output: string, expected: readonly string[]): string[] {
  const lines = output.split("\n");
  let from = 0;
  const missing: string[] = [];
  for (const want of expected) {
    const idx = lines.findIndex((l, i) => i >= from && matchesDocumented(l, want));
    if (idx === -1) missing.push(want);
    else from = idx + 1;
  }
  return missing;
}

/**
 * A bash script that runs the steps in order in one shell (so variables and functions carry over), with stderr
 * merged into stdout and a `<marker> N` line after each step carrying its exit status.
 */
export function stepsScript(steps: readonly ReadmeStep[], marker: string, opts: { serveLast?: boolean } = {}): string {
  const last = opts.serveLast ? steps.at(-1) : undefined;
  const run = last ? steps.slice(0, -1) : steps;
  const lines = ["exec 2>&1", ...run.map((s) => `${s.command}\necho "${marker} $?"`)];
  // A server (`npm start`) as the block's last step: the shell becomes it, and the test stops it with a signal.
  // (`A=b exec cmd`: bash applies leading assignments to the command exec runs.)
  if (last) {
    const [, assignments, command] = /^((?:\w+=\S*\s+)*)([\s\S]*)$/.exec(last.command)!;
    lines.push(`${assignments}exec ${command}`);
  }
  return lines.join("\n");
}

/** Splits a stepsScript's output into each step's output and exit status. */
export function splitStepOutput(output: string, marker: string): { output: string; exitCode: number }[] {
  const out: { output: string; exitCode: number }[] = [];
  let buffer: string[] = [];
  for (const line of output.split("\n")) {
    // Output without a final newline (curl -s) puts the marker at the end of its last line.
    const at = line.lastIndexOf(`${marker} `);
    const status = at === -1 ? null : /^(\d+)$/.exec(line.slice(at + marker.length + 1));
    if (status) {
      if (at > 0) buffer.push(line.slice(0, at));
      out.push({ output: buffer.join("\n"), exitCode: Number(status[1]) });
      buffer = [];
    } else {
      buffer.push(line);
    }
  }
  return out;
}
