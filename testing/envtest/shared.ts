/**
 * One control plane for a whole test run. `deno test` runs each test file in
 * its own isolate, so nothing in memory is shared between files; what is
 * shared is a folder. The test launcher (`testing/envtest/run.ts`) starts a
 * control plane, writes its connection into the control plane's folder with
 * {@link shareControlPlane} and names that folder in
 * {@link SHARED_CONTROL_PLANE_ENV}; each test file then connects with
 * {@link connectControlPlane} instead of starting its own.
 *
 * @example
 * ```ts
 * const dir = Deno.env.get(SHARED_CONTROL_PLANE_ENV);
 * const cp = dir ? await connectControlPlane(dir) : await startControlPlane();
 * ```
 * @module
 */
import { KubeClient } from "../../lib/kube/client.ts";
import type { KeyPair } from "../../lib/pki.ts";
import { type ControlPlane, controlPlaneHandle } from "./controlplane.ts";

/** The environment variable naming the folder of the run's shared control plane. */
export const SHARED_CONTROL_PLANE_ENV = "NICO_TEST_CONTROL_PLANE";

const CONNECTION_FILE = "connection.json";

interface Connection {
  server: string;
  kubeconfigPath: string;
  bin: string;
  ca: KeyPair;
}

/** Writes what a test file needs to use `cp` into its folder; answers the folder. */
export async function shareControlPlane(cp: ControlPlane): Promise<string> {
  const connection: Connection = { server: cp.server, kubeconfigPath: cp.kubeconfigPath, bin: cp.bin, ca: cp.ca };
  await Deno.writeTextFile(`${cp.dir}/${CONNECTION_FILE}`, JSON.stringify(connection), { mode: 0o600 });
  return cp.dir;
}

/**
 * A handle on the control plane shared in `dir`: its own admin client and a
 * scratch folder of its own (`cp.dir`). Stopping the handle closes the client
 * and removes the scratch folder; the control plane runs on for other files.
 */
export async function connectControlPlane(dir: string): Promise<ControlPlane> {
  const text = await Deno.readTextFile(`${dir}/${CONNECTION_FILE}`).catch((err) => {
    throw new Error(`${SHARED_CONTROL_PLANE_ENV}=${dir} names no shared control plane: ${err.message}`);
  });
  const c = JSON.parse(text) as Connection;
  const scratch = await Deno.makeTempDir({ dir, prefix: "client-" }); // inside: the launcher removes it, whatever happens here
  const client = KubeClient.load(c.kubeconfigPath, { userAgent: "nico-tests", fieldManager: "nico-tests" });
  const removeScratch = () => {
    try {
      Deno.removeSync(scratch, { recursive: true });
    } catch { /* already gone */ }
  };
  const stop = async () => {
    await client.close();
    removeScratch();
  };
  return controlPlaneHandle({ ...c, dir: scratch, client }, stop, removeScratch);
}
