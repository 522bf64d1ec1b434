// Reading a provisioning file: the size limit (PROVISION_FILE_MAX_BYTES, shared with the specFiles it names) holds
// before and while reading, even for an endless input; NUL and ill-formed text are refused by where they are, written
// as bytes or as escapes. Real files in a temporary folder; nothing reaches a database.
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { defaultOf } from "../config/variables.ts";
import { AppError } from "../http/errors.ts";
import { parseProvisioningText, readProvisioningFile } from "./document.ts";
import { readBoundedText, readBudget } from "./read-file.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "pb-provision-read-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).code).toBe("validation_failed");
  return err as AppError;
}

const WORKSPACE = "workspaces:\n  - id: ws_r\n    name: Read\n    groups: { viewer: a, editor: b, admin: c }\n";

describe("size limit", () => {
  test("the default is 4 MiB", () => {
    expect(defaultOf("PROVISION_FILE_MAX_BYTES")).toBe(4 * 1024 * 1024);
  });

  test.each([
    [2048, 2048, true],
    [2048, 2049, false],
    [2048, 100_000, false],
  ])("limit %i, file of %i bytes: read %s", async (max, size, ok) => {
    const path = join(dir, `sized-${size}.yaml`);
    await writeFile(path, `${WORKSPACE}#${"x".repeat(size - WORKSPACE.length - 2)}\n`);
    if (ok) {
      expect(await readProvisioningFile(path, { maxBytes: max })).toMatchObject({ workspaces: [{ id: "ws_r" }] });
      return;
    }
    const err = await refusal(readProvisioningFile(path, { maxBytes: max }));
    expect(err.detail).toBe(
      `${path}: larger than PROVISION_FILE_MAX_BYTES (${max} bytes). Split the workspaces over several files, or raise PROVISION_FILE_MAX_BYTES.`,
    );
    expect(err.extra).toEqual({ limit: "PROVISION_FILE_MAX_BYTES", maxBytes: max });
  });

  test("an endless input (a pipe fed without end) is cut at the limit, not read to the end", async () => {
    const fifo = join(dir, "endless.yaml");
    await new Promise<void>((resolve, reject) =>
      spawn("mkfifo", [fifo]).on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`mkfifo ${code}`)))),
    );
    // `yes` writes its line forever; it ends on SIGPIPE once the reader closes.
    const writer = spawn("sh", ["-c", 'exec yes "# endless" > "$0"', fifo], { stdio: "ignore" });
    try {
      const err = await refusal(readBoundedText(fifo, fifo, readBudget(64 * 1024)));
      expect(err.detail).toContain(`${fifo}: larger than PROVISION_FILE_MAX_BYTES (65536 bytes)`);
    } finally {
      writer.kill("SIGKILL");
    }
  });

  test("specFiles share the file's limit: the one that takes the total past it is named", async () => {
    const spec = JSON.stringify({ title: "T", time: { from: "now-1h", to: "now" }, panels: [] });
    await writeFile(join(dir, "small.json"), spec);
    await writeFile(join(dir, "padded.json"), `${spec}${" ".repeat(1900)}`);
    const main = (file: string) =>
      `${WORKSPACE}    dashboards:\n      - id: db_a\n        specFile: small.json\n      - id: db_b\n        specFile: ${file}\n`;
    await writeFile(join(dir, "shared-ok.yaml"), main("small.json"));
    await writeFile(join(dir, "shared-over.yaml"), main("padded.json"));
    await expect(readProvisioningFile(join(dir, "shared-ok.yaml"), { maxBytes: 2048 })).resolves.toBeTruthy();
    const err = await refusal(readProvisioningFile(join(dir, "shared-over.yaml"), { maxBytes: 2048 }));
    expect(err.detail).toBe(
      "dashboard db_b: specFile padded.json: larger than PROVISION_FILE_MAX_BYTES (2048 bytes); the provisioning file and its specFiles share that limit. Split the workspaces over several files, or raise PROVISION_FILE_MAX_BYTES.",
    );
  });

  test("text given directly (PROVISION_DOCUMENT) is held to the same limit, in UTF-8 bytes", () => {
    const doc = JSON.stringify({ workspaces: [{ id: "ws_e", name: "é".repeat(600), groups: { viewer: "a", editor: "b", admin: "c" } }] });
    expect(() => parseProvisioningText(doc, "PROVISION_DOCUMENT", 1500)).not.toThrow();
    expect(() => parseProvisioningText(doc, "PROVISION_DOCUMENT", 1200)).toThrow(
      "PROVISION_DOCUMENT: larger than PROVISION_FILE_MAX_BYTES (1200 bytes).",
    );
  });
});

describe("NUL and ill-formed text", () => {
  test.each([
    ["at the very start", "\0workspaces: []\n", 1, 1, 0],
    ["inside a value on line 3", `${WORKSPACE.replace("name: Read", "name: Re\0ad")}`, 3, 13, WORKSPACE.indexOf("Read") + 2],
    ["after CRLF lines", "# a\r\n# b\r\nx: \0\r\n", 3, 4, 13],
    ["at the end", `${WORKSPACE}\0`, 5, 1, WORKSPACE.length],
  ])("a NUL byte %s is named with its line, column and byte", async (_where, text, line, column, byte) => {
    const path = join(dir, "nul.yaml");
    await writeFile(path, text);
    const err = await refusal(readProvisioningFile(path));
    expect(err.detail).toBe(
      `${path}: contains a NUL byte at line ${line}, column ${column} (byte ${byte}); a provisioning file is UTF-8 text without NUL.`,
    );
    expect(err.extra).toEqual({ line, column, byte });
  });

  test("a NUL byte past the first read chunk is found and placed too", async () => {
    const path = join(dir, "nul-late.yaml");
    const lines = Array.from({ length: 5000 }, (_, i) => `# line ${i + 1} ${"-".repeat(20)}`);
    lines[4321] = "x: \0";
    const text = `${lines.join("\n")}\n`;
    await writeFile(path, text);
    const err = await refusal(readProvisioningFile(path));
    expect(err.extra).toEqual({ line: 4322, column: 4, byte: text.indexOf("\0") });
  });

  test("a NUL in a specFile names the specFile", async () => {
    await writeFile(join(dir, "nul-spec.json"), '{"title": "T\0"}');
    await writeFile(join(dir, "with-spec.yaml"), `${WORKSPACE}    dashboards:\n      - id: db_n\n        specFile: nul-spec.json\n`);
    const err = await refusal(readProvisioningFile(join(dir, "with-spec.yaml")));
    expect(err.detail).toBe(
      "dashboard db_n: specFile nul-spec.json: contains a NUL byte at line 1, column 13 (byte 12); a provisioning file is UTF-8 text without NUL.",
    );
  });

  test("bytes that are not UTF-8 are refused as such", async () => {
    const path = join(dir, "latin1.yaml");
    await writeFile(path, Buffer.concat([Buffer.from(WORKSPACE.replace("Read", "R")), Buffer.from([0xe9, 0x0a])]));
    expect((await refusal(readProvisioningFile(path))).detail).toBe(`${path}: is not valid UTF-8 text`);
  });

  test.each([
    ["a YAML \\0 escape in a value", 'workspaces:\n  - id: ws_q\n    name: "Sh\\0op"\n', "workspaces[ws_q].name contains a NUL character"],
    ["a \\u0000 escape in JSON", '{"workspaces": [{"id": "ws_q", "name": "a\\u0000"}]}', "workspaces[ws_q].name contains a NUL character"],
    ["a lone surrogate escape", '{"workspaces": [{"id": "ws_q", "name": "\\ud800"}]}', "workspaces[ws_q].name contains invalid Unicode"],
    [
      "a NUL in a key",
      'workspaces:\n  - id: ws_q\n    groups: { "vie\\0wer": a }\n',
      "a key of workspaces[ws_q].groups contains a NUL character",
    ],
    [
      "deep inside a panel",
      `{"workspaces": [{"id": "ws_q", "dashboards": [{"id": "db_q", "spec": {"panels": [{"id": "p", "sql": "SELECT '\\u0000'"}]}}]}]}`,
      "workspaces[ws_q].dashboards[db_q].spec.panels[p].sql contains a NUL character",
    ],
  ])("%s is refused by where it is, before the store sees it", (_label, text, expected) => {
    expect(() => parseProvisioningText(text, "doc.yaml")).toThrow(`doc.yaml: ${expected}; provisioning text must not.`);
  });

  test("property: parsed text is refused exactly when some string in it holds a NUL or a lone surrogate", () => {
    const unit = fc.oneof(
      { weight: 10, arbitrary: fc.constantFrom("a", "é", "\u{1F600}", " ") },
      { weight: 1, arbitrary: fc.constantFrom("\0", "\ud800", "\udc00") },
    );
    const text = fc.array(unit, { maxLength: 6 }).map((u) => u.join(""));
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom("a", "b", "c"), text), { maxLength: 4 }), (pairs) => {
        const doc = { workspaces: [Object.fromEntries(pairs)] };
        const bad = Object.values(doc.workspaces[0]!).some(
          (v: string) => v.includes("\0") || /[\ud800-\udfff]/u.test(v.replace(/[\ud800-\udbff][\udc00-\udfff]/g, "")),
        );
        const run = () => parseProvisioningText(JSON.stringify(doc), "doc.json");
        if (bad) expect(run).toThrow(AppError);
        else expect(run()).toEqual(JSON.parse(JSON.stringify(doc)));
      }),
      { seed: 20261127, numRuns: 300 },
    );
  });
});
