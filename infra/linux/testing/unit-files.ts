// Test support: the shipped systemd units, environment files and nginx configuration of infra/linux, read the way
// systemd and nginx read them, so the tests run what an operator installs.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const LINUX_DIR = fileURLToPath(new URL("../", import.meta.url));

/** The [Service] settings of a unit (a repeated key keeps every value, in order). */
export function unitSettings(unit: string): Map<string, string[]> {
  const text = readFileSync(`${LINUX_DIR}systemd/${unit}`, "utf8");
  const out = new Map<string, string[]>();
  let section = "";
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = header[1]!;
      continue;
    }
    const eq = line.indexOf("=");
    const key = `${section}.${line.slice(0, eq)}`;
    out.set(key, [...(out.get(key) ?? []), line.slice(eq + 1)]);
  }
  return out;
}

/** An environment file as systemd's EnvironmentFile= reads it: KEY=VALUE lines, `#` comments. */
export function envFile(name: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of readFileSync(`${LINUX_DIR}env/${name}`, "utf8").split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const eq = line.indexOf("=");
    out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return out;
}

/** The environment a unit's process gets from its EnvironmentFile= lines (later files win, as in systemd). */
export function unitEnvironment(unit: string): Record<string, string> {
  const files = unitSettings(unit).get("Service.EnvironmentFile") ?? [];
  return Object.assign({}, ...files.map((f) => envFile(f.replace(/^-?\/etc\/pulseboard\//, ""))));
}

/** A unit's ExecStart as argv. */
export function unitCommand(unit: string): string[] {
  return unitSettings(unit).get("Service.ExecStart")![0]!.split(/\s+/);
}

/** The shipped nginx configuration. */
export function nginxConf(): string {
  return readFileSync(`${LINUX_DIR}nginx/pulseboard.conf`, "utf8");
}
