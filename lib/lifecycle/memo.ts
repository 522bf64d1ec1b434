/**
 * `load()` once, its promise shared by every caller; a rejected promise is dropped, so the next call tries
 * again (a chunk that failed to load once, say under file-descriptor pressure, must not fail every later
 * call until a restart).
 */
export function memoUntilFailure<T>(load: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => {
    value ??= load().catch((err: unknown) => {
      value = undefined;
      throw err;
    });
    return value;
  };
}

/**
 * As memoUntilFailure, for a load that depends on a value read anew on every call (an API key or client secret
 * in the live config, which a rotation replaces): calls with the same key share one load, a changed key starts a
 * new one. A failure drops only the load it ended, so one for an older key cannot discard a newer one.
 */
export function memoPerKey<T>(key: () => string | undefined, load: (key: string | undefined) => Promise<T>): () => Promise<T> {
  let built: { key: string | undefined; load: () => Promise<T> } | undefined;
  return () => {
    const current = key();
    if (built === undefined || built.key !== current) built = { key: current, load: memoUntilFailure(() => load(current)) };
    return built.load();
  };
}
