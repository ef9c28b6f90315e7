/** Bounded concurrency: at most `n` calls of the returned function run at once, first come first served. */
export function limiter(n: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (active < n) active++;
    else await new Promise<void>((resolve) => waiting.push(resolve)); // the slot is handed over, still counted
    try {
      return await fn();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else active--;
    }
  };
}

/** Runs `fn` over `items` with at most `n` in flight; rejects on the first error after all settle. */
export async function forEachLimited<T>(items: T[], n: number, fn: (item: T, i: number) => Promise<void>) {
  const run = limiter(n);
  const results = await Promise.allSettled(items.map((item, i) => run(() => fn(item, i))));
  const failed = results.find((r) => r.status === "rejected");
  if (failed) throw (failed as PromiseRejectedResult).reason;
}
