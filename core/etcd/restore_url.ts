/**
 * The presigned URL of a backup a restore gives the bootstrap node: how long
 * it is valid, when NICO signs it again, and what NICO adds to a host's
 * failed download that looks like an expired URL. Pure.
 *
 * @module
 */
import { formatDuration } from "../../lib/duration.ts";

/** How long a presigned URL of a backup is valid by default (`--restore-url-lifetime`). */
export const RESTORE_URL_LIFETIME_MS = 15 * 60_000;

/** The most time left on a URL for which it is signed again: 5 minutes, or a third of a shorter lifetime. */
const RENEW_MS = 5 * 60_000;

/**
 * Whether a URL valid until `expiresAt` (epoch ms; NaN when unknown) is signed again at `now`, while the bootstrap
 * node has not applied: when less than 5 minutes (a third of a shorter lifetime) are left.
 *
 * @example
 * ```ts
 * import { renewsUrl } from "./restore_url.ts";
 * renewsUrl(Date.parse("2026-01-01T00:15:00Z"), new Date("2026-01-01T00:00:00Z"), 15 * 60_000); // false
 * renewsUrl(Date.parse("2026-01-01T00:15:00Z"), new Date("2026-01-01T00:11:00Z"), 15 * 60_000); // true
 * renewsUrl(NaN, new Date(0), 15 * 60_000); // true
 * ```
 */
export function renewsUrl(expiresAt: number, now: Date, lifetimeMs: number): boolean {
  const window = Math.min(RENEW_MS, lifetimeMs / 3);
  return !(expiresAt - now.getTime() > window);
}

/**
 * What NICO adds to the bootstrap node's reason for a failed restore when the store refused its download (an
 * HTTP 403, AccessDenied, or "expired"): the URL's lifetime and what to change; "" for any other failure.
 *
 * @example
 * ```ts
 * import { expiredUrlHint } from "./restore_url.ts";
 * expiredUrlHint("curl: (22) The requested URL returned error: 403", 900_000).startsWith(" (the store refused"); // true
 * expiredUrlHint("sha256 mismatch for backup b", 900_000); // ""
 * ```
 */
export function expiredUrlHint(failed: string, lifetimeMs: number | undefined): string {
  if (!/\b403\b|AccessDenied|expired/i.test(failed)) return "";
  const valid = lifetimeMs ? `is valid for ${formatDuration(lifetimeMs)} from when NICO signs it` : "expires";
  return ` (the store refused the download: the presigned URL ${valid}, and a host that downloads it later, ` +
    "after a long build, is refused; give NICO a longer --restore-url-lifetime, then ask again with a new requestId)";
}
