/** Resolves with the first event `pred` accepts from an `onChange(cb) → unsubscribe` source (watchers). */
export function nextEvent<E>(source: { onChange(cb: (e: E) => void): () => void }, pred: (e: E) => boolean, timeoutMs = 10_000): Promise<E> {
  return new Promise<E>((resolve, reject) => {
    const t = setTimeout(() => {
      off();
      reject(new Error(`no matching reload event within ${timeoutMs} ms`));
    }, timeoutMs);
    const off = source.onChange((e) => {
      if (pred(e)) {
        clearTimeout(t);
        off();
        resolve(e);
      }
    });
  });
}
