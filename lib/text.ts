/**
 * Text for people: lists of names, shortened.
 *
 * @module
 */

/**
 * `a, b, c and 4 more`.
 *
 * @example
 * ```ts
 * import { listNames } from "./text.ts";
 * listNames(["a", "b", "c"], 2); // "a, b and 1 more"
 * ```
 */
export function listNames(names: string[], max = 5): string {
  if (names.length <= max) return names.join(", ");
  return `${names.slice(0, max).join(", ")} and ${names.length - max} more`;
}
