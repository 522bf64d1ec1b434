// A view's dashboard variables on the stream host: a stream's `var-NAME` values checked against each variable's
// options when the stream opens (so a viewer cannot mint views beyond the options), and the values each panel
// binds on every tick. Query variables' options come from the process's one options cache
// (lib/dashboards/variables.ts), shared by every view and viewer and re-run at most once per dashboard cadence.
import type { Panel } from "../lib/dashboards/spec.ts";
import {
  type OptionsOf,
  type VariableDashboard,
  type VariableOptionsCache,
  type VariableValues,
  selectionValues,
  viewSelection,
} from "../lib/dashboards/variables.ts";
import { AppError } from "../lib/http/errors.ts";
import { variablesNamed } from "../lib/sql-guard/index.ts";
import type { LoadedDashboard } from "./poller.ts";

/** Without an options cache, a query variable's options cannot be read: its panels and views say so. */
const noQueryOptions: OptionsOf = async (v) => {
  throw new AppError("source_unavailable", `Variable ${v.name}: its options cannot be read on this instance.`, {
    cause: "runner_unavailable",
  });
};

/**
 * The dashboard as the options cache knows it: the stored range and cadence (a view's own range does not change
 * a variable's options, which are the same for every viewer and match the options route).
 */
export function storedDashboard(d: LoadedDashboard): VariableDashboard {
  return { id: d.id, workspaceId: d.workspaceId, spec: d.saved ?? d.spec };
}

/** How the stream host reads a view's variables (createViewVariables). */
export interface ViewVariables {
  /**
   * A stream's requested values (`var-NAME`, shapes already checked by resolveView) against the options: the
   * view's variables as its key holds them, those equal to the defaults left out. A value outside the options is
   * a 400 naming `var-NAME`.
   */
  select(dashboard: LoadedDashboard, requested: Readonly<Record<string, readonly string[]>>): Promise<VariableValues>;
  /** The values a panel binds in a tick: the view's selection, All and defaults from the current options. */
  valuesFor(panel: Panel, dashboard: LoadedDashboard): Promise<VariableValues>;
}

/** Builds the view variables on `cache` (null: query variables fail, custom ones work). */
export function createViewVariables(cache: VariableOptionsCache | null): ViewVariables {
  const optionsOf = (d: LoadedDashboard): OptionsOf => (cache ? cache.optionsOf(storedDashboard(d)) : noQueryOptions);
  return {
    select: (d, requested) => viewSelection(d.spec, requested, optionsOf(d)),
    valuesFor: (panel, d) => {
      const declared = d.spec.variables ?? [];
      if (declared.length === 0) return Promise.resolve({});
      // Only the variables the panel names: one whose options fail fails only the panels that use it.
      return selectionValues(d.spec, d.vars ?? {}, optionsOf(d), variablesNamed(panel.sql, declared));
    },
  };
}
