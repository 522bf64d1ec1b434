// The dependency rules of lib/, checked on the source: the top-level folders of lib/ form no import
// cycle (so each folder can be read, tested and changed from the bottom up), and nothing under lib/
// imports the processes built on it (handlers/, stream-host/), not even test support. See README.md,
// "Layout".
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const LIB = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.dirname(LIB);

/** Every .ts file under `dir`, as paths relative to the repository root with `/` separators. */
function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...tsFiles(full));
    else if (entry.name.endsWith(".ts")) out.push(path.relative(ROOT, full).split(path.sep).join("/"));
  }
  return out.sort();
}

/**
 * The module specifiers a file imports: `import`, `import type`, `export … from`, `import x = require()`,
 * `import("…")` with a literal, and `import("…")` types.
 */
function importsOf(fileName: string, source: string): string[] {
  const sf = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: string[] = [];
  const literal = (node: ts.Node | undefined): void => {
    if (node && ts.isStringLiteralLike(node)) found.push(node.text);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) literal(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      literal(node.moduleReference.expression);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      literal(node.arguments[0]);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      literal(node.argument.literal);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** The top-level folder of lib/ a repository path belongs to (`lib/query/runner.ts` → `query`), if any. */
function libFolder(repoPath: string): string | undefined {
  const parts = repoPath.split("/");
  return parts[0] === "lib" && parts.length > 2 ? parts[1] : undefined;
}

/** Test files and test support (anything in a `testing/` folder) are not part of the layering. */
function isTestCode(repoPath: string): boolean {
  return repoPath.endsWith(".test.ts") || repoPath.split("/").includes("testing");
}

interface Edge {
  from: string;
  to: string;
  /** `file → imported file` pairs that make the edge. */
  via: string[];
}

/** Resolved relative imports of every file: [importing file, imported file] as repository paths. */
function relativeImports(files: string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (const file of files) {
    for (const spec of importsOf(file, readFileSync(path.join(ROOT, file), "utf8"))) {
      if (!spec.startsWith(".")) continue;
      pairs.push([file, path.posix.normalize(path.posix.join(path.posix.dirname(file), spec))]);
    }
  }
  return pairs;
}

/** Folder-to-folder edges of lib/ from its non-test source. */
function folderEdges(): Map<string, Map<string, Edge>> {
  const graph = new Map<string, Map<string, Edge>>();
  const files = tsFiles(LIB).filter((f) => !isTestCode(f));
  for (const [file, target] of relativeImports(files)) {
    const from = libFolder(file);
    const to = libFolder(target);
    if (!from || !to || from === to) continue;
    const out = graph.get(from) ?? new Map<string, Edge>();
    graph.set(from, out);
    const edge = out.get(to) ?? { from, to, via: [] };
    out.set(to, edge);
    edge.via.push(`${file} → ${target}`);
  }
  return graph;
}

/**
 * The cycle groups of a directed graph (strongly connected components of more than one node, by Tarjan's
 * algorithm), each with its members and one cycle through its first member as the path that closes it
 * (`a → b → a`), found by breadth-first search.
 */
function findCycles(graph: ReadonlyMap<string, Iterable<string>>): { members: string[]; path: string[] }[] {
  const succ = (n: string): string[] => [...(graph.get(n) ?? [])];
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const strong = (v: string): void => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of succ(v)) {
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, idx.get(w) as number));
      }
    }
    if (low.get(v) === idx.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) components.push(component.sort());
    }
  };
  const nodes = new Set<string>([...graph.keys()]);
  for (const n of [...nodes].sort()) if (!idx.has(n)) strong(n);
  return components.map((members) => ({ members, path: cycleThrough(members) }));

  function cycleThrough(component: string[]): string[] {
    const inside = new Set(component);
    const start = component[0];
    // Breadth-first from start within the component until an edge leads back to start.
    const prev = new Map<string, string>();
    const queue = [start];
    const seen = new Set([start]);
    while (queue.length > 0) {
      const v = queue.shift() as string;
      for (const w of succ(v).sort()) {
        if (w === start) {
          const route = [v];
          while (route[0] !== start) route.unshift(prev.get(route[0]) as string);
          return [...route, start];
        }
        if (inside.has(w) && !seen.has(w)) {
          seen.add(w);
          prev.set(w, v);
          queue.push(w);
        }
      }
    }
    return component;
  }
}

describe("findCycles", () => {
  it("finds nothing in a layered graph and names the path of each cycle", () => {
    expect(
      findCycles(
        new Map([
          ["a", ["b", "c"]],
          ["b", ["c"]],
        ]),
      ),
    ).toEqual([]);
    const cycles = findCycles(
      new Map([
        ["a", ["b"]],
        ["b", ["c"]],
        ["c", ["a", "d"]],
        ["d", ["e"]],
        ["e", ["d"]],
      ]),
    );
    expect(cycles).toEqual(
      expect.arrayContaining([
        { members: ["a", "b", "c"], path: ["a", "b", "c", "a"] },
        { members: ["d", "e"], path: ["d", "e", "d"] },
      ]),
    );
    expect(cycles).toHaveLength(2);
  });
});

describe("importsOf", () => {
  it("sees value, type-only, re-export and literal dynamic imports", () => {
    const source = [
      `import { a } from "./a.ts";`,
      `import type { B } from "../b/b.ts";`,
      `export { c } from "./c.ts";`,
      `export type * from "./d.ts";`,
      `import "./side-effect.ts";`,
      `const e = await import("./e.ts");`,
      `type F = import("./f.ts").F;`,
    ].join("\n");
    expect(importsOf("x.ts", source)).toEqual(["./a.ts", "../b/b.ts", "./c.ts", "./d.ts", "./side-effect.ts", "./e.ts", "./f.ts"]);
  });
});

describe("lib/ architecture", () => {
  it("has no import cycle between its top-level folders", () => {
    const graph = folderEdges();
    const adjacency = new Map<string, string[]>();
    for (const [from, out] of graph) adjacency.set(from, [...out.keys()]);
    // Each cycle group: one cycle as an example, then every import between folders of the group.
    const report = findCycles(adjacency).map((cycle) => {
      const group = new Set(cycle.members);
      const edges = [...group].flatMap((from) => [...(graph.get(from)?.values() ?? [])].filter((e) => group.has(e.to)));
      return [cycle.path.join(" → "), ...edges.flatMap((e) => [...new Set(e.via)].map((v) => `  ${v}`))].join("\n");
    });
    expect(report, `import cycles between lib/ folders:\n${report.join("\n")}`).toEqual([]);
  });

  it("never imports handlers/ or stream-host/, not even in tests or test support", () => {
    const offending = relativeImports(tsFiles(LIB))
      .filter(([, target]) => target.startsWith("handlers/") || target.startsWith("stream-host/"))
      .map(([file, target]) => `${file} → ${target}`);
    expect(offending).toEqual([]);
  });
});
