import type { AdmissionGate } from "../admission.ts";

/** A gate that admits everything and records what it was told (provider tests, no database). */
export function recordingGate(): AdmissionGate & { usage: { input: number; output: number }[]; admitted: number } {
  const g = {
    usage: [] as { input: number; output: number }[],
    admitted: 0,
    async admit() {
      g.admitted += 1;
    },
    async recordUsage(_ws: string, _model: string, u: { input: number; output: number }) {
      g.usage.push(u);
    },
  };
  return g;
}
