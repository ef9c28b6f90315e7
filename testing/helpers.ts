/** Small helpers shared by the integration tests. */
import { type ControlPlane, type ControlPlaneOptions, startControlPlane } from "./envtest/controlplane.ts";
import { connectControlPlane, SHARED_CONTROL_PLANE_ENV } from "./envtest/shared.ts";

/**
 * Polls `fn` until it returns a value other than `undefined`/`false`, or fails after `timeoutMs`. The window is
 * a bound on failure, sized for a loaded machine (a wait ends as soon as `fn` holds), never a time to wait.
 * `NICO_TEST_WAITS=1` prints what each wait waited for and how long.
 */
export async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 60_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  const t0 = Date.now();
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) {
        if (Deno.env.get("NICO_TEST_WAITS")) console.error(`WAIT ${((Date.now() - t0) / 1000).toFixed(1)} s ${what}`);
        return v as T;
      }
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${lastError}` : ""}`);
}

/**
 * Reads `read()` until `ok` holds of what it answered, or `timeoutMs` passed; answers the last read either way (the
 * caller's assertion names what there was), and whether `ok` held.
 */
export async function readUntil<T>(
  what: string,
  read: () => Promise<T>,
  ok: (value: T) => boolean,
  timeoutMs = 30_000,
): Promise<{ value: T | undefined; held: boolean }> {
  let value: T | undefined;
  const held = await eventually(what, async () => ok(value = await read()), timeoutMs, 200).catch(() => false);
  return { value, held };
}

/** Starts `start()` once, on first use; stops the result when this file's tests end (the `unload` event). */
function oncePerFile(start: () => Promise<ControlPlane>): () => Promise<ControlPlane> {
  let cp: Promise<ControlPlane> | undefined;
  return () => {
    cp ??= start().then((started) => {
      globalThis.addEventListener("unload", () => started.stopNow());
      return started;
    });
    return cp;
  };
}

const runControlPlane = oncePerFile(() => {
  const shared = Deno.env.get(SHARED_CONTROL_PLANE_ENV);
  return shared ? connectControlPlane(shared) : startControlPlane();
});

/**
 * The test run's control plane: the one `deno task test` starts for every
 * file (named in {@link SHARED_CONTROL_PLANE_ENV}) or, for a file run alone,
 * one of its own, stopped when its tests end. Each test makes its own
 * namespace (`cp.namespace()`), and nothing here may be stopped by a test.
 */
export function sharedControlPlane(): { get(): Promise<ControlPlane> } {
  return { get: runControlPlane };
}

/**
 * A control plane of this file's own, for tests that need special flags
 * (an audit log, extra controllers, other CRDs): started on first use,
 * stopped when the file's tests end.
 */
export function ownControlPlane(opts: ControlPlaneOptions): { get(): Promise<ControlPlane> } {
  return { get: oncePerFile(() => startControlPlane(opts)) };
}
