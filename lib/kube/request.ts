/**
 * The shape of one request inside {@link ./client.ts}: its query and body.
 *
 * @module
 */

/** Query parameters; `undefined` ones are left out. */
export type Query = Record<string, string | number | boolean | undefined>;

/** What one request carries besides its method and path. */
export interface RequestOptions {
  query?: Query;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal | undefined;
}
