/** Small helpers shared by the integration tests. */
import { type ControlPlane, startControlPlane } from "./envtest/controlplane.ts";

/** Polls `fn` until it returns a value other than `undefined`/`false`, or fails after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 20_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v as T;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${lastError}` : ""}`);
}

/**
 * One control plane shared by every test of a file. Call `get()` in each
 * test and `stop()` in the file's last test (or an unload handler).
 */
export function sharedControlPlane() {
  let cp: Promise<ControlPlane> | undefined;
  return {
    get(): Promise<ControlPlane> {
      cp ??= startControlPlane();
      return cp;
    },
    async stop(): Promise<void> {
      if (cp) await (await cp).stop();
      cp = undefined;
    },
  };
}
