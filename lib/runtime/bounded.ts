/**
 * Independent writes of one pass sent side by side, a few at a time.
 *
 * @module
 */

/**
 * Calls `fn` for every item with at most `limit` calls in flight, and waits
 * for all of them. After a call fails no new call starts, the ones in flight
 * finish (nothing is left half-sent behind the caller's back), and the first
 * error, in item order, is thrown: like a loop that stops at its first error,
 * with up to `limit - 1` more items already under way.
 *
 * @example
 * ```ts
 * import { eachBounded } from "./bounded.ts";
 * const seen: number[] = [];
 * await eachBounded([1, 2, 3], 2, async (n) => { seen.push(n); });
 * seen.length; // 3
 * ```
 */
export async function eachBounded<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<void>,
): Promise<void> {
  const errors: { index: number; error: unknown }[] = [];
  let next = 0;
  const lane = async () => {
    while (next < items.length && !errors.length) {
      const index = next++;
      try {
        await fn(items[index]!, index);
      } catch (error) {
        errors.push({ index, error });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
  if (errors.length) throw errors.sort((a, b) => a.index - b.index)[0]!.error;
}

/**
 * `Promise.all` that waits for every promise before it throws: the first
 * rejection, in argument order, once none is still running.
 *
 * @example
 * ```ts
 * import { allSettledOrThrow } from "./bounded.ts";
 * const [a, b] = await allSettledOrThrow([Promise.resolve(1), Promise.resolve("two")]);
 * a + b.length; // 4
 * ```
 */
export async function allSettledOrThrow<T extends readonly unknown[]>(
  promises: readonly [...{ [K in keyof T]: Promise<T[K]> }],
): Promise<T> {
  const settled = await Promise.allSettled(promises);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
}
