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
