// npm run bench -- <name> [<name> ...]: runs each named benchmark and prints its figures and ratios.
// Each bench/<name>.ts exports `run(): Promise<void>` and prints its own lines.
const names = process.argv.slice(2);
const available = ["guard", "runner", "fanout", "scrape", "drain", "redact", "coldstart", "web", "editor", "incremental"];
const chosen = names.length ? names : available;
for (const name of chosen) {
  if (!available.includes(name)) {
    console.error(`unknown benchmark "${name}"; choose from ${available.join(", ")}`);
    process.exit(2);
  }
}
for (const name of chosen) {
  const mod = (await import(`./${name}.ts`)) as { run(): Promise<void> };
  console.log(`\n== ${name}`);
  await mod.run();
}
process.exit(0);
