import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { jsonEqual } from "./diff.ts";
import { mergeSpecs } from "./merge.ts";

type P = { id: string; title: string; sql: string; [k: string]: unknown };
const panel = (id: string, extra: Partial<P> = {}): P => ({ id, title: id, sql: "SELECT 1", ...extra });
const spec = (panels: P[], extra: Record<string, unknown> = {}) => ({ title: "T", panels, ...extra });

describe("mergeSpecs", () => {
  test("changes to different panels and settings are both kept, with no conflict", () => {
    const base = spec([panel("a"), panel("b")]);
    const mine = spec([panel("a", { title: "A!" }), panel("b")]);
    const theirs = spec([panel("a"), panel("b", { sql: "SELECT 2" }), panel("c")], { title: "Theirs" });
    const r = mergeSpecs(base, mine, theirs);
    expect(r.conflicts).toEqual([]);
    expect(r.spec).toEqual(spec([panel("a", { title: "A!" }), panel("b", { sql: "SELECT 2" }), panel("c")], { title: "Theirs" }));
  });

  test("both changed one panel's field differently: theirs stays and mine is added beside it", () => {
    const base = spec([panel("a")]);
    const r = mergeSpecs(base, spec([panel("a", { sql: "mine" })]), spec([panel("a", { sql: "theirs" })]));
    expect(r.spec.panels).toEqual([panel("a", { sql: "theirs" }), panel("a-mine", { title: "a (mine)", sql: "mine" })]);
    expect(r.conflicts).toEqual([{ path: "panels[a]", resolution: "both_kept" }]);
  });

  test("a panel I added and one I deleted that they changed are both in the result", () => {
    const base = spec([panel("a"), panel("b")]);
    const mine = spec([panel("a"), panel("new")]);
    const theirs = spec([panel("a"), panel("b", { title: "B changed" })]);
    expect(mergeSpecs(base, mine, theirs).spec.panels.map((p) => p.id)).toEqual(["a", "b", "new"]);
  });

  test("a setting both changed: mine wins and theirs is reported", () => {
    const r = mergeSpecs(spec([], { title: "base" }), spec([], { title: "mine" }), spec([], { title: "theirs" }));
    expect(r.spec.title).toBe("mine");
    expect(r.conflicts).toEqual([{ path: "title", resolution: "mine_kept_theirs_shown", theirs: "theirs" }]);
  });

  const ids = fc.uniqueArray(fc.constantFrom("a", "b", "c", "d"), { maxLength: 4 });
  const panels = ids.chain((list) => fc.tuple(...list.map((id) => fc.constantFrom("1", "2", "3").map((sql) => panel(id, { sql })))));
  test("property: nothing either side wrote is lost; merging with an unchanged side gives the other side", () => {
    fc.assert(
      fc.property(panels, panels, panels, (b, m, t) => {
        const base = spec(b);
        const r = mergeSpecs(base, spec(m), spec(t));
        const out = r.spec.panels;
        // Every panel that one side changed or added is in the result with that side's content.
        for (const [side, other] of [
          [m, t],
          [t, m],
        ] as const) {
          for (const p of side) {
            const inBase = b.find((x) => x.id === p.id);
            const otherP = other.find((x) => x.id === p.id);
            if (inBase && jsonEqual(inBase, p)) continue;
            if (otherP && jsonEqual(otherP, p)) continue;
            expect(out.some((x) => x.sql === p.sql && (x.id === p.id || x.id.startsWith(`${p.id}-mine`)))).toBe(true);
          }
        }
        expect(new Set(out.map((p) => p.id)).size).toBe(out.length);
        expect(mergeSpecs(base, base, spec(t)).spec).toEqual(spec(t));
        expect(mergeSpecs(base, spec(m), base).spec.panels).toEqual(m);
      }),
    );
  });
});
