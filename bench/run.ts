// npm run bench -- <name> [<name> ...]: runs each named benchmark and prints its figures and ratios.
// Each bench/<name>.ts exports `run(): Promise<void>` and prints its own lines.
const names = process.argv.slice(2);
const available = ["guard", "runner", "fanout", "scrape", "drain", "redact", "coldstart", "web", "editor", "incremental"];
for (const name of names) {
  if (!available.includes(name)) {
    console.error(`unknown benchmark "${name}"; choose from ${available.join(", ")}`);
    process.exit(2);
  }
}
// The pages' bench covers the editor page too: `web` prints the editor's figures after its own.
const alsoRuns: Record<string, string[]> = { web: ["web", "editor"] };
const chosen = [...new Set((names.length ? names : available).flatMap((n) => alsoRuns[n] ?? [n]))];
for (const name of chosen) {
  const mod = (await import(`./${name}.ts`)) as { run(): Promise<void> };
  console.log(`\n== ${name}`);
  await mod.run();
}
process.exit(0);
