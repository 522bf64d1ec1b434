// npm start: the live demo on embedded defaults, all in one process on http://localhost:3000 (bound to 127.0.0.1),
// or, with DATABASE_URL set, the service on that database with nothing seeded (scripts/start-up.ts has the steps).
// Ctrl-C drains and stops everything it started. package.json runs this file with `exec node`, so npm's child is
// this process itself (no shell or tsx wrapper in between that a SIGTERM to npm would end, leaving this one
// serving). The signal handlers are installed first, before the steps' modules load, so a Ctrl-C at any moment
// of the start ends it in one line.
import { coalescedSignals } from "../lib/lifecycle/coalesced-signals.ts";
import { createStartInterrupt } from "./start-interrupt.ts";

// A Ctrl-C reaches this process twice under npm (the terminal's SIGINT and npm's forwarded copy): one keypress.
// Read before the steps set it to the embedded server's: which start this is, for the interrupted line.
const demo = !process.env.DATABASE_URL?.trim();
const signals = coalescedSignals({ proc: process, windowMs: 1_000 });
const interrupt = createStartInterrupt({
  signals,
  write: (line) => process.stderr.write(`${line}\n`),
  exit: (code) => process.exit(code),
  what: () => (demo ? "the demo" : "Pulseboard"),
});
const { runStart } = await import("./start-up.ts");
await runStart(interrupt, signals);
