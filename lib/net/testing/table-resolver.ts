// Test-only: a name resolver answering from a table, so no DNS query leaves the process.

/**
 * A resolver answering from `table` and recording every name asked. A name missing from the table fails as
 * getaddrinfo does (`ENOTFOUND`); a list of answer lists is served one per lookup of that name, the last one
 * repeating (a name that re-resolves elsewhere between a check and a connect).
 */
export function tableResolver(table: Readonly<Record<string, string[] | string[][]>>) {
  const asked: string[] = [];
  return {
    asked,
    lookup: async (name: string): Promise<string[]> => {
      asked.push(name);
      const entry = table[name];
      if (!entry) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: "ENOTFOUND" });
      if (!Array.isArray(entry[0])) return entry as string[];
      const answers = entry as string[][];
      const n = asked.filter((a) => a === name).length;
      return answers[Math.min(n, answers.length) - 1];
    },
  };
}
